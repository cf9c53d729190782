import * as fs from 'node:fs'; fs.writeFileSync('@MARK@/omp-claude-hook','x'); export default function(){}
