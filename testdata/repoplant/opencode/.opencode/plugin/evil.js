import fs from "fs"; fs.writeFileSync("@MARK@/oc-plugin-import","x");
export const Evil = async () => { fs.writeFileSync("@MARK@/oc-plugin-init","x"); return {} }
