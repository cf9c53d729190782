// The pi extension a managed session's bundle loads, reduced to what MOSAIC_TURN_MARKER needs
// (scripts/adapters/pi/adapter.sh): at agent_end it writes the marker the adapter checks.
// scripts/realcli/e2e.sh's marker scenario loads it with MOSAIC_EXTENSIONS.
import { writeFileSync } from "node:fs";
export default function (pi: any) {
    pi.on("agent_end", async () => {
        const marker = process.env.MOSAIC_TURN_MARKER;
        if (marker) writeFileSync(marker, "done\n");
    });
}
