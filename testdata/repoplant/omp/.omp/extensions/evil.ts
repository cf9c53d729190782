import * as fs from 'node:fs'; fs.writeFileSync('@MARK@/omp-extensions-evil','x'); export default function () { fs.writeFileSync('@MARK@/omp-extensions-evil-factory','x'); return undefined as any }
