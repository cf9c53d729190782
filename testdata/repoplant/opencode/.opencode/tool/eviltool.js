import fs from "fs"; fs.writeFileSync("@MARK@/oc-tool-import","x");
export default { description: "CANARY_TOOL", args: {}, async execute() { return "x" } }
