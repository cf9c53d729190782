//! A reply as data: a whole JSON body, or a server-sent-event script the server plays frame by
//! frame. The wire modules build these without doing any I/O, so a test can read back exactly
//! what a CLI would receive.

use std::time::Duration;

use serde_json::{Map, Value};

use super::plan::{Call, Pace, Plan};
use super::scenario::chunk_text;

/// One step of a streamed reply.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// One SSE frame (`event: …\ndata: …\n\n`), flushed on its own.
    Frame(String),
    /// A pause before the next frame (`slow`).
    Pause(Duration),
    /// The stream stops here, without its terminator (`[DONE]`, `message_stop`,
    /// `response.completed`), and the connection closes: a provider or proxy that gave up
    /// mid-answer (`drop`). The HTTP body itself ends cleanly, as the close-delimited body of
    /// such a server does: an HTTP-level abort would test the CLI's transport retries instead
    /// (claude and Kimi Code back off for minutes), not whether the answer is read as cut.
    Cut,
}

/// What the server sends back.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A JSON body with a status (a non-streamed answer, an error, a model list).
    Json {
        /// The HTTP status.
        status: u16,
        /// The body.
        body: Value,
    },
    /// A `text/event-stream` body.
    Stream(Script),
}

impl Reply {
    /// A 200 JSON reply.
    pub fn ok(body: Value) -> Reply {
        Reply::Json { status: 200, body }
    }
}

/// The frames of a streamed reply, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Script {
    /// The steps, played in order.
    pub steps: Vec<Step>,
    /// The next `sequence_number` (the Responses API numbers its events).
    sequence: Option<u64>,
}

impl Script {
    /// A script whose named events carry a `sequence_number` from 0 (the Responses API).
    pub fn numbered() -> Script {
        Script {
            steps: Vec::new(),
            sequence: Some(0),
        }
    }

    /// A `data:` frame with no event name (chat completions).
    pub fn data(&mut self, value: &Value) {
        self.steps.push(Step::Frame(format!("data: {value}\n\n")));
    }

    /// The chat completions terminator, `data: [DONE]`.
    pub fn done(&mut self) {
        self.steps.push(Step::Frame("data: [DONE]\n\n".to_string()));
    }

    /// A named event whose data is `fields` plus `"type": name` (and the sequence number when
    /// the script is numbered), as Anthropic and the Responses API frame them.
    pub fn event(&mut self, name: &str, fields: Value) {
        let mut object = match fields {
            Value::Object(object) => object,
            _ => Map::new(),
        };
        object.insert("type".into(), name.into());
        if let Some(next) = self.sequence.as_mut() {
            object.insert("sequence_number".into(), (*next).into());
            *next += 1;
        }
        let data = Value::Object(object);
        self.steps
            .push(Step::Frame(format!("event: {name}\ndata: {data}\n\n")));
    }

    /// The pieces of `text` streamed at `pace`, each through `frame`, pausing after each when the
    /// pace says so.
    pub fn paced(&mut self, text: &str, pace: Pace, mut frame: impl FnMut(&mut Script, &str)) {
        for piece in chunk_text(text, pace.pieces) {
            frame(self, &piece);
            if pace.delay_ms > 0 {
                self.steps
                    .push(Step::Pause(Duration::from_millis(pace.delay_ms)));
            }
        }
    }

    /// The first pieces of `text` through `frame`, then the cut: the `drop` scenario.
    pub fn dropped(&mut self, text: &str, mut frame: impl FnMut(&mut Script, &str)) {
        for piece in Plan::drop_pieces(text) {
            frame(self, &piece);
        }
        self.cut();
    }

    /// Cuts the connection after the frames so far.
    pub fn cut(&mut self) {
        self.steps.push(Step::Cut);
    }
}

/// Splits a tool call's JSON arguments in two deltas, on a character boundary, as a model streams
/// them in pieces a client must join.
pub fn halves(args: &str) -> [&str; 2] {
    let mut mid = args.len() / 2;
    while !args.is_char_boundary(mid) {
        mid += 1;
    }
    let (a, b) = args.split_at(mid);
    [a, b]
}

/// The frames of a script as the client receives them, and whether the stream was cut.
#[cfg(test)]
pub fn wire_text(script: &Script) -> (String, bool) {
    let mut text = String::new();
    for step in &script.steps {
        match step {
            Step::Frame(frame) => text.push_str(frame),
            Step::Pause(_) => {}
            Step::Cut => return (text, true),
        }
    }
    (text, false)
}

/// Parses an SSE body into (event name, data) frames; panics on anything a client would refuse.
#[cfg(test)]
pub fn parse_sse(text: &str) -> Vec<(Option<String>, String)> {
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "unterminated frame at the end"
    );
    text.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let mut event = None;
            let mut data = String::new();
            for line in frame.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            (event, data)
        })
        .collect()
}

/// The frames of a script, parsed.
#[cfg(test)]
pub fn parse_frames(script: &Script) -> Vec<(Option<String>, String)> {
    parse_sse(&wire_text(script).0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbered_events_count_from_zero_and_carry_their_type() {
        let mut script = Script::numbered();
        script.event("a", json!({"x": 1}));
        script.event("b", json!({}));
        let frames = parse_frames(&script);
        let second: Value = serde_json::from_str(&frames[1].1).unwrap();
        assert_eq!(frames[0].0.as_deref(), Some("a"));
        assert_eq!(second, json!({"type": "b", "sequence_number": 1}));
    }

    #[test]
    fn halves_rejoin_on_a_character_boundary() {
        assert_eq!(halves("abcd"), ["ab", "cd"]);
        assert_eq!(halves("aé").concat(), "aé");
        assert_eq!(halves(""), ["", ""]);
    }

    #[test]
    fn a_slow_pace_pauses_after_each_piece() {
        let mut script = Script::default();
        script.paced(
            "abcdef",
            Pace {
                pieces: 3,
                delay_ms: 5,
            },
            |s, p| s.data(&json!(p)),
        );
        assert_eq!(script.steps.len(), 6);
        assert_eq!(script.steps[1], Step::Pause(Duration::from_millis(5)));
    }
}

/// What every reply names: its id, the model, its stamp.
pub struct Head<'a> {
    /// The reply's id (`chatcmpl-…`, `msg_…`, `resp_…`).
    pub id: String,
    /// The model the request named, or [`super::scenario::MODEL_ID`].
    pub model: String,
    /// Its clock, token counts and id source.
    pub stamp: &'a Stamp,
}

/// The encoder of one reply in the wire API `W` (a marker type each wire module defines, so
/// each module writes its own methods on `Encoder<W>`).
pub struct Encoder<'a, W> {
    /// What the reply names.
    pub head: Head<'a>,
    api: std::marker::PhantomData<W>,
}

/// A wire API's encoder: the same plan as a stream of events or as one JSON body.
pub trait Wire {
    /// The prefix of the reply's id.
    const ID_PREFIX: &'static str;
    /// The streamed reply.
    fn stream(&self, call: &Call, plan: &Plan) -> Script;
    /// The whole reply, for a request without `"stream": true`.
    fn whole(&self, plan: &Plan) -> Value;
}

/// The reply `plan` makes in the wire API `W`, streamed when the request asks.
pub fn reply<'a, W>(call: &Call, plan: &Plan, stamp: &'a Stamp) -> Reply
where
    Encoder<'a, W>: Wire,
{
    let model = call.model().unwrap_or(super::scenario::MODEL_ID);
    let wire = Encoder::<W> {
        head: Head {
            id: stamp.id(<Encoder<'a, W> as Wire>::ID_PREFIX),
            model: model.to_string(),
            stamp,
        },
        api: std::marker::PhantomData,
    };
    if call.stream() {
        Reply::Stream(wire.stream(call, plan))
    } else {
        Reply::ok(wire.whole(plan))
    }
}

/// The ids, timestamp and token counts of one reply.
#[derive(Debug)]
pub struct Stamp {
    /// Seconds since the epoch, for `created` fields.
    pub created: u64,
    /// Input tokens reported: a quarter of the request body's bytes, as a real tokenizer roughly
    /// counts, so a bigger prompt shows bigger usage.
    pub input_tokens: u64,
    /// Output tokens reported: fixed, so a test can expect them.
    pub output_tokens: u64,
    seed: u64,
    next: std::cell::Cell<u32>,
}

impl Stamp {
    /// Output tokens every answer reports.
    pub const OUTPUT_TOKENS: u64 = 42;

    /// A stamp for a reply to a body of `body_bytes`; `seed` makes its ids unique to the reply.
    pub fn new(seed: u64, created: u64, body_bytes: usize) -> Stamp {
        Stamp {
            created,
            input_tokens: (body_bytes as u64 / 4).max(1),
            output_tokens: Self::OUTPUT_TOKENS,
            seed,
            next: std::cell::Cell::new(0),
        }
    }

    /// A fresh id with `prefix` (`msg_`, `call_0_`, `toolu_`…), unique within the server.
    pub fn id(&self, prefix: &str) -> String {
        let n = self.next.get();
        self.next.set(n + 1);
        format!("{prefix}{:016x}{n:04x}", self.seed)
    }
}
