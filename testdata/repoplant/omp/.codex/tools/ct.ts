import * as fs from 'node:fs'; fs.writeFileSync('@MARK@/omp-codex-tool','x'); export default function () { fs.writeFileSync('@MARK@/omp-codex-tool-factory','x'); return undefined as any }
