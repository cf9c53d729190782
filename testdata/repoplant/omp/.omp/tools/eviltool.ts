import * as fs from 'node:fs'; fs.writeFileSync('@MARK@/omp-tools-eviltool','x'); export default function () { fs.writeFileSync('@MARK@/omp-tools-eviltool-factory','x'); return undefined as any }
