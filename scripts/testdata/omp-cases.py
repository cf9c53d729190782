#!/usr/bin/env python3
# usage: scripts/testdata/omp-cases.py testdata/omp   (then MOOT_BLESS=1 cargo test -p moot-parse-omp --test golden, and review)
# Writes hand-made omp golden inputs, shaped like omp 18.2.3's real lines.
import json, os, sys
out = sys.argv[1]
SID = "01a229c0-91fa-75fa-8206-38514f5ba04a"
RESULT = '{"gitmoot_result":{"decision":"approved","summary":"done","findings":[],"changes_made":[],"tests_run":[],"needs":[],"delegations":[]}}'
ANSWER = "I looked at the task and everything is in order.\n\n" + RESULT
TS = 1795996816695

def j(o): return json.dumps(o, separators=(",", ":"), ensure_ascii=False)
def session(sid=SID): return j({"type":"session","version":3,"id":sid,"timestamp":"2026-11-30T00:00:15.866Z","cwd":"/tmp/rcws-omp"})
def simple(t, **kw): d={"type":t}; d.update(kw); return j(d)
def usage(i, o): return {"input":i,"output":o,"cacheRead":0,"cacheWrite":0,"totalTokens":i+o,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}
def text(t): return {"type":"text","text":t}
def tool(name="bash", cid="call_0_3e30533a"): return {"type":"toolCall","id":cid,"name":name,"arguments":{"command":"ls","i":"."},"partialArgs":"{\"command\": \"ls\"}","streamIndex":0}
def thinking(t): return {"type":"thinking","thinking":t,"thinkingSignature":"reasoning_content"}
def amsg(content, stop="stop", u=(17152,42), provider="fake", model="fake-model", **extra):
    m={"role":"assistant","content":content,"api":"openai-completions","provider":provider,"model":model,"usage":usage(*u) if u else None,"stopReason":stop,"timestamp":TS}
    if u is None: del m["usage"]
    m.update(extra); return m
def mend(msg): return j({"type":"message_end","message":msg})
def turn_end(msg): return j({"type":"turn_end","message":msg,"toolResults":[]})
def a(content, stop="stop", **kw):
    m = amsg(content, stop, **kw)
    return [j({"type":"message_start","message":dict(m, content=[])}), mend(m), turn_end(m)]
def user(t="Inspect the workspace and finish with the gitmoot_result JSON line."):
    m={"role":"user","content":[text(t)],"attribution":"user","timestamp":TS}
    return [j({"type":"message_start","message":m}), mend(m)]
def start(): return [session(), simple("agent_start"), simple("turn_start")] + user()
def end(terminal=True, telemetry=None, messages=True):
    d={"type":"agent_end","messages":[]}
    if terminal is not None: d["isTerminal"]=terminal
    if telemetry: d["telemetry"]={"usage":{"inputTokens":telemetry[0],"outputTokens":telemetry[1],"cachedInputTokens":0,"cacheWriteTokens":0,"reasoningOutputTokens":0,"totalTokens":sum(telemetry)},"stepCount":2}
    return j(d)
def err(status=529, message="upstream is overloaded", stop="error"):
    extra={"errorId":135168}
    if status is not None: extra["errorStatus"]=status
    if message is not None: extra["errorMessage"]=message
    return a([], stop, u=(0,0), **extra)
def retry_start(msg="429 Rate limit reached (fake)"): return j({"type":"auto_retry_start","attempt":1,"maxAttempts":10,"delayMs":1000,"errorMessage":msg,"errorId":135168})
def retry_end(success, final=None):
    d={"type":"auto_retry_end","success":success,"attempt":1}
    if final is not None: d["finalError"]=final
    return j(d)
def toolresult(u=None):
    m={"role":"toolResult","toolCallId":"call_0_3e30533a","toolName":"bash","content":[text("README.md\nmain.rs\n")],"isError":False,"timestamp":TS}
    if u: m["usage"]={"input":u,"output":u}
    return [j({"type":"tool_execution_start","toolCallId":"call_0_3e30533a","toolName":"bash","args":{"command":"ls"}}),
            j({"type":"tool_execution_end","toolCallId":"call_0_3e30533a","toolName":"bash","result":{"content":[text("README.md\nmain.rs\n")]},"isError":False}),
            mend(m)]

cases = {}
def case(name, lines, args=None, raw=None):
    cases[name] = (raw if raw is not None else "\n".join(lines) + "\n", args)

ok = start() + a([text(ANSWER)]) + [end()]
case("success-minimal", [session()] + a([text(ANSWER)])[1:2] + [end()])
case("success-full-shape", ok)
case("stop-error-exit0-fails", start() + err(529, "upstream is overloaded") + [end()])
case("stop-aborted-no-message", start() + err(None, None, stop="aborted") + [end()])
case("stop-error-status-string", start() + err("ECONNRESET", "socket hang up") + [end()])
case("stop-error-status-null", start() + err(None, "provider said no") + [end()])
case("no-agent-end", start() + a([text(ANSWER)]))
case("empty-stream", [], raw="")
case("not-terminal", start() + a([text(ANSWER)]) + [end(terminal=False)])
case("terminal-field-absent", start() + a([text(ANSWER)]) + [end(terminal=None)])
case("terminal-then-not-terminal", start() + a([text(ANSWER)]) + [end(), end(terminal=False)])
case("not-terminal-then-terminal", start() + a([text("working")]) + [end(terminal=False)] + a([text(ANSWER)]) + [end()])
case("empty-answer-whitespace", start() + a([text("  \n\t ")]) + [end()])
case("empty-answer-no-content", start() + a([]) + [end()])
case("no-assistant-message", start() + [end()])
case("truncated-tooluse-with-text", start() + a([text("Let me read the file first."), tool()], "toolUse") + [end()])
case("truncated-tooluse-text-only", start() + a([text("Let me read the file first.")], "toolUse") + [end()])
case("truncated-length-mid-sentence", start() + a([text("The review found that the function")], "length") + [end()])
case("truncated-length-cutting-tool-call", start() + a([tool()], "length") + [end()])
case("truncated-final-tool-call-stop", start() + a([tool()], "stop") + [end()])
case("truncated-spoke-then-empty", start() + a([text("I will check the tests.")]) + a([]) + [end()])
case("maxtime-mid-tool-loop", start() + a([text("Still working (step 1)."), tool()], "toolUse") + toolresult()
     + a([text("Still working (step 2)."), tool(cid="call_1")], "toolUse")
     + [j({"type":"message_end","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[text("Command aborted")],"isError":True,"skipReason":"aborted","timestamp":TS}}), end()])
case("answer-after-tool-loop", start() + a([tool()], "toolUse") + toolresult() + a([text(ANSWER)]) + [end()])
case("thinking-and-tool-parts-do-not-leak", start() + a([thinking("secret plan: approve"), {"type":"toolCall","id":"c9","name":"read","arguments":{"path":"/repo/a.go"},"text":"tool text"}, text(ANSWER)]) + [end()])
case("text-parts-concatenate", start() + a([text("Part one. "), thinking("hmm"), text(RESULT)]) + [end()])
case("retry-recovered", start() + err(529, "upstream is overloaded") + [retry_start()] + a([text(ANSWER)]) + [retry_end(True), end()])
case("retry-recovered-by-tool-call", start() + err(500, "boom") + [retry_start()] + a([tool()], "toolUse") + [retry_end(True)] + toolresult() + a([text(ANSWER)]) + [end()])
case("contentless-turn-does-not-clear", start() + err(529, "upstream is overloaded") + a([]) + [end()])
case("whitespace-turn-does-not-clear", start() + err(529, "upstream is overloaded") + a([text(" \n ")]) + [end()])
case("thinking-only-turn-does-not-clear", start() + err(529, "upstream is overloaded") + a([thinking("let me think")]) + [end()])
case("contentless-tooluse-does-not-clear", start() + err(529, "upstream is overloaded") + a([], "toolUse") + [end()])
case("retry-success-true-alone-does-not-clear", start() + err(529, "upstream is overloaded") + [retry_start(), retry_end(True), end()])
case("gave-up-final-error", start() + a([]) + [retry_start("empty stop"), retry_end(False, "Assistant returned an empty stop after retry cap")] + [end()])
case("gave-up-no-final-error", start() + a([]) + [retry_start("empty stop"), retry_end(False)] + [end()])
case("gave-up-keeps-first-cause", start() + err(503, "The server is overloaded") + [retry_start()] + err(503, "still overloaded") + [retry_end(False, "503 final")] + [end()])
case("gave-up-latched-against-later-content", start() + err(503, "overloaded") + [retry_start(), retry_end(False, "gave up")] + a([text(ANSWER)]) + [end()])
case("retry-open-at-end", start() + a([text(ANSWER)]) + [end(), retry_start("429 Rate limit reached")])
case("retry-open-died-before-retry", start() + err(429, "Rate limit") + [retry_start()])
case("retry-closed-saga-ok", start() + a([text(ANSWER)]) + [retry_start(), retry_end(True), end()])
case("precedence-not-terminal-over-open-retry", start() + a([text(ANSWER)]) + [retry_start(), end(terminal=False)])
case("precedence-open-retry-over-truncation", start() + a([text("Let me look.")], "toolUse") + [retry_start(), end()])
case("precedence-failed-turn-over-not-terminal", start() + err(500, "boom") + [end(terminal=False)])
case("first-error-wins", start() + err(529, "first failure") + err(500, "second failure") + [end()])
case("recovered-error-not-cause-of-later", start() + err(429, "blip") + a([text("recovered")]) + err(500, "later failure") + [end()])
case("unknown-events-skipped", start() + [simple("notice", level="warning", message="x"), simple("model_changed", model="m"), "plain log line from a wrapper", "", "   ", simple("auto_compaction_start", reason="x"), j({"type":"tool_execution_end","toolCallId":"c","toolName":"bash","result":{"content":[]},"isError":False}), j([1,2,3]), '"a json string"', '{"no_type":true}', '{"type":42}'] + a([text(ANSWER)]) + [simple("future_event", payload={"deep":[1,{"x":None}]}), end()])
case("unknown-undecodable-skipped", start() + ['{"type":"notice","message":"unterminated', '{"type":"tool_execution_update","partialResult":{"content":[{"type":"text","text":"half'] + a([text(ANSWER)]) + [end()])
case("unknown-with-nested-message-end-skipped", start() + [j({"type":"custom_wrapper","inner":{"type":"message_end","message":{"role":"assistant","content":"broken"}}})] + a([text(ANSWER)]) + [end()])
case("drift-session-numeric-id", [j({"type":"session","version":3,"id":12345})] + start()[1:] + a([text(ANSWER)]) + [end()])
case("drift-usage-string", start() + [mend(amsg([text(ANSWER)], u=None, usage={"input":"10","output":5}))] + [end()])
case("drift-retry-start-error-object", start() + a([text(ANSWER)]) + [j({"type":"auto_retry_start","attempt":1,"errorMessage":{"code":429}})] + [retry_end(True), end()])
case("drift-retry-end-success-string", start() + a([text(ANSWER)]) + [retry_start(), j({"type":"auto_retry_end","success":"false","attempt":1}), end()])
case("drift-agent-end-terminal-string", start() + a([text(ANSWER)]) + [j({"type":"agent_end","messages":[],"isTerminal":"true"})])
case("drift-assistant-string-content", start() + [mend({"role":"assistant","content":"plain string","stopReason":"stop"})] + [end()])
case("drift-stop-reason-number", start() + [mend(amsg([text(ANSWER)], stopReason=1))] + [end()])
case("drift-message-end-role-null", start() + a([text(ANSWER)]) + [mend({"role":None,"content":[text("final?")],"stopReason":"error"})] + [end()])
case("drift-message-end-role-absent", start() + a([text(ANSWER)]) + [mend({"content":[text("final?")],"stopReason":"error"})] + [end()])
case("drift-message-end-no-message", start() + a([text(ANSWER)]) + [simple("message_end")] + [end()])
case("drift-message-end-message-not-object", start() + a([text(ANSWER)]) + [j({"type":"message_end","message":"oops"})] + [end()])
case("drift-malformed-assistant-message-end", start() + a([text(ANSWER)]) + ['{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"overloa'] + [end()])
case("garbled-agent-end-line-is-garbage", start() + a([text(ANSWER)]) + ['{"type":"agent_end","messages":[{"role":"assi', end()])
case("duplicate-type-key-fails-closed", start() + a([text(ANSWER)]) + ['{"type":"agent_end","type":"agent_end","messages":[],"isTerminal":true}'])
case("garbage-with-one-marker-skipped", start() + ['{"type":"message_end","message":{"role":"us', 'x "role":"assistant" y'] + a([text(ANSWER)]) + [end()])
case("user-string-content-skipped", start() + [mend({"role":"user","content":"a bare string prompt","timestamp":TS}), mend({"role":"custom","customType":"note","content":"hook text","display":True,"attribution":"agent"})] + a([text(ANSWER)]) + [end()])
case("non-assistant-undecodable-skipped", start() + [mend({"role":"developer","content":[{"type":"text","text":5}],"usage":{"input":"x"}})] + a([text(ANSWER)]) + [end()])
case("tool-result-usage-not-counted", start() + a([tool()], "toolUse", u=(100,10)) + toolresult(u=1000) + a([text(ANSWER)], u=(200,20)) + [end()])
case("unreadable-outranks-model-error", start() + err(529, "upstream is overloaded") + [j({"type":"session","id":7})] + [end()])
case("first-unreadable-wins", start() + [j({"type":"agent_end","isTerminal":"no"}), j({"type":"session","id":[1]})] + a([text(ANSWER)]) + [end()])
case("diagnostics-survive-bad-row", [j({"type":"auto_retry_end","success":1})] + start() + a([text(ANSWER)], u=(321,45)) + [end()])
case("usage-summed", start() + a([tool()], "toolUse", u=(1000,100)) + toolresult() + a([tool()], "toolUse", u=(1200,110)) + toolresult() + a([text(ANSWER)], u=(1400,120)) + [end()])
case("usage-absent", start() + a([text(ANSWER)], u=None) + [end()])
case("usage-reported-on-failure", start() + a([text("partial")], u=(5000,300)) + err(529, "overloaded") + [end()])
case("telemetry-replaces-sum", start() + a([text(ANSWER)], u=(100,10)) + [end(telemetry=(150,12))])
case("telemetry-segments-summed", start() + a([text("first")], u=(100,10)) + [end(telemetry=(120,11))] + a([text(ANSWER)], u=(100,10)) + [end(telemetry=(130,12))])
case("telemetry-partial-falls-back", start() + a([text("first")], u=(100,10)) + [end(telemetry=(900,90))] + a([text(ANSWER)], u=(100,10)) + [end()])
case("telemetry-below-sum-loses", start() + a([text(ANSWER)], u=(100,10)) + [end(telemetry=(150,9))])
case("telemetry-equal-axis-wins", start() + a([text(ANSWER)], u=(100,10)) + [end(telemetry=(100,15))])
case("family-anthropic", start() + a([text(ANSWER)], provider="anthropic", model="claude-sonnet-4-5") + [end()])
case("family-openai", start() + a([text(ANSWER)], provider="openai", model="gpt-5.5") + [end()])
case("family-openai-codex", start() + a([text(ANSWER)], provider="openai-codex", model="gpt-5.5-codex") + [end()])
case("family-kimi-code", start() + a([text(ANSWER)], provider="kimi-code", model="k3") + [end()])
case("family-other-provider", start() + a([text(ANSWER)], provider="devin", model="swe-1") + [end()])
case("provider-of-final-message", start() + a([tool()], "toolUse", provider="anthropic", model="claude-opus-4") + toolresult() + a([text(ANSWER)], provider="openai", model="gpt-5.5") + [end()])
case("session-last-non-empty-wins", [session(), j({"type":"session","version":3,"id":""}), session("01a229c0-0000-7000-8000-00000000beef")] + start()[1:] + a([text(ANSWER)]) + [end()])
case("no-session-header", start()[1:] + a([text(ANSWER)]) + [end()])
case("result-missing", start() + a([text("Looks good to me, nothing to flag.")]) + [end()])
case("result-invalid", start() + a([text('{"gitmoot_result":{"decision":"maybe","summary":"x"}}')]) + [end()])
case("result-legacy-status-field", start() + a([text('{"gitmoot_result":{"status":"ok","summary":"done"}}')]) + [end()])
case("result-in-fence-with-prose", start() + a([text("Review done.\n```json\n" + RESULT + "\n```\nBye.")]) + [end()])
case("result-first-valid-wins", start() + a([text('{"gitmoot_result":{"decision":"maybe","summary":"x"}}\n{"gitmoot_result":{"decision":"changes_requested","summary":"fix the test","findings":[{"title":"flaky","severity":"high"}],"needs":["ci"]}}\n{"gitmoot_result":{"decision":"failed","summary":"late"}}')]) + [end()])
case("result-with-delegations", start() + a([text('{"gitmoot_result":{"decision":"approved","summary":"delegating","delegations":[{"id":"r1","agent":"reviewer","action":"review","prompt":"check it"},{"id":"r2","ephemeral":{"runtime":"claude"},"action":"ask","prompt":"why?","deps":["r1"]}]}}')]) + [end()])
case("exit-code-killed-by-deadline", ok, args=["--exit-code", "124"])
case("exit-code-sigkill", ok, args=["--exit-code", "137"])
case("exit-code-nonzero-on-clean-stream", ok, args=["--exit-code", "1"])
case("exit-code-nonzero-keeps-stream-class", start() + err(500, "boom") + [end()], args=["--exit-code", "1"])
case("exit-code-zero-is-not-success", start() + err(500, "boom") + [end()], args=["--exit-code", "0"])
case("exit-code-not-found", [], raw="", args=["--exit-code", "127"])
case("status-file-timed-out", ok, args=["--status-file", "status-timed-out.status"])
case("status-file-clean", ok, args=["--status-file", "status-clean.status"])
case("status-file-missing", ok, args=["--status-file", "no-such-status-file.status"])
long_line = j({"type":"tool_execution_end","toolCallId":"c","toolName":"bash","result":{"content":[text("x"*5000)]}})
case("line-over-ceiling", start() + [long_line] + a([text(ANSWER)]) + [end()], args=["--max-line-bytes", "4096"])
case("events-over-ceiling", start() + a([text(ANSWER)]) + [end()], args=["--max-events", "5"])
case("cut-mid-agent-end", None, raw="\n".join(start() + a([text(ANSWER)])) + "\n" + end()[:40])
case("cut-mid-message-update", None, raw="\n".join(start() + a([text(ANSWER)]) + [end()]) + "\n" + '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"hal')
case("cut-before-final-newline", None, raw="\n".join(ok))
case("crlf-line-endings", None, raw="\r\n".join(ok) + "\r\n")
case("bom-at-start", None, raw="\ufeff" + "\n".join(ok) + "\n")
case("line-separator-in-text", start() + a([text("line one\u2028line two\u2029 " + RESULT)]) + [end()])

os.makedirs(out, exist_ok=True)
for name, (raw, args) in cases.items():
    with open(os.path.join(out, name + ".ndjson"), "w", encoding="utf-8", newline="") as f:
        f.write(raw)
    if args:
        with open(os.path.join(out, name + ".args"), "w") as f:
            f.write("\n".join(args) + "\n")
with open(os.path.join(out, "status-timed-out.status"), "w") as f:
    f.write('{"exit_code":124,"signal":"SIGTERM","timed_out":true,"elapsed_ms":600012,"pid":4242}\n')
with open(os.path.join(out, "status-clean.status"), "w") as f:
    f.write('{"exit_code":0,"signal":null,"timed_out":false,"elapsed_ms":8123,"pid":4242}\n')
print(len(cases), "cases")
