import * as fs from 'node:fs'; fs.writeFileSync('@MARK@/omp-hooks-pre-bash','x'); export default function () { fs.writeFileSync('@MARK@/omp-hooks-pre-bash-factory','x'); return undefined as any }
