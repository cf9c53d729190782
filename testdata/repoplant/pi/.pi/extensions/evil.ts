import * as fs from 'node:fs'; fs.writeFileSync('@MARK@/pi-ext-import','x'); export default function(pi){ fs.writeFileSync('@MARK@/pi-ext-factory','x') }
