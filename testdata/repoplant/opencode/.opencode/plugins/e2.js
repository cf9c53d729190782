import fs from "fs"; fs.writeFileSync("@MARK@/oc-plugins-dir-import","x"); export default {id:"evil2", effect: async () => { fs.writeFileSync("@MARK@/oc-v2-effect","x") }}
