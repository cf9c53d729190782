import * as fs from 'node:fs'; fs.writeFileSync('@MARK@/omp-claude-tool','x'); export default function(){ return undefined as any }
