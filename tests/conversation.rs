//! Conversation runs in virtual time: the runner and the conversation plan drive the
//! simulator's engine directly (no HTTP) under tokio's paused clock, so every latency is the
//! model's exact answer. With the prefix cache on, a later turn prefills only what is new
//! since the last one (the reply and the new message), so its TTFT stays near turn 1's and
//! drops far below what the same turn costs with the cache off, where the whole growing
//! history is prefilled every turn and TTFT rises with it.

mod common;

use bench::engine::runner::{run, SendCtx, Sender, Sent};
use bench::metrics::summary::summarize;
use bench::model::record::Outcome;
use bench::model::scenario::Slo;
use bench::model::summary::Summary;
use bench::model::text::vocab_word;
use bench::plan::conversation::Reply;
use bench::plan::prompts::{Prompt, RequestSpec};
use bench::plan::Plan;
use bench::sim::http::InProcess;
use bench::sim::SimOptions;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Sends chat requests to the in-process engine, replying with vocabulary words, and keeps
/// every prompt it saw by request index.
struct SimSender {
    sim: InProcess,
    prompts: Mutex<Vec<(u64, Vec<u64>, String)>>,
}

impl Sender for SimSender {
    async fn send(&self, spec: RequestSpec, ctx: SendCtx) -> Sent {
        let sent = Instant::now();
        let Prompt::Messages(m) = &spec.prompt else {
            panic!("a conversation sends chat messages")
        };
        let tokens = bench::sim::tokenize::chat(m).unwrap();
        let times = self
            .sim
            .generate(tokens.clone(), spec.max_tokens, true)
            .await;
        let reply: String = (0..times.len())
            .map(|i| vocab_word(spec.index as usize * 7 + i))
            .collect::<Vec<_>>()
            .join(" ");
        self.prompts
            .lock()
            .unwrap()
            .push((spec.index, tokens.clone(), reply.clone()));
        Sent {
            record: common::fake_record(
                &spec,
                &ctx,
                common::Faked {
                    sent,
                    outcome: if times.is_empty() {
                        Outcome::EmptyOutput
                    } else {
                        Outcome::Ok
                    },
                    tokens: times.first().zip(times.last()).map(|(a, b)| (*a, *b)),
                    prompt_tokens: tokens.len() as u64,
                    output_tokens: times.len() as u64,
                },
            ),
            itl_us: Default::default(),
            itl_token_us: Default::default(),
            chunk_tokens: Default::default(),
            reply: spec.keep_reply.then_some(Reply {
                text: reply,
                tool_calls: Vec::new(),
            }),
        }
    }
}

/// Runs the whole plan with `sender` (no stop).
async fn run_all<S: Sender>(sender: Arc<S>, plan: &Plan) -> bench::engine::runner::RunData {
    run(
        sender,
        plan,
        Duration::from_secs(1),
        CancellationToken::new(),
        None,
        |_| {},
    )
    .await
    .unwrap()
}

/// 12 sessions of 4 turns (300-word messages, 16-token replies, 200 ms think time) from 3
/// users against the simulator with the prefix cache `on` or `off`.
async fn conversation(prefix_cache: &str) -> (Summary, Vec<(u64, Vec<u64>, String)>) {
    let s = bench::config::scenario::parse(
        "name = \"c\"\nseed = 3\n[request]\nignore_eos = true\n[workload]\ntype = \"conversation\"\nturns = 4\nuser_tokens = 300\noutput_tokens = 16\nthink_time_ms = 200\n[load]\nconcurrency = 3\nsessions = 12\n",
        Path::new("c.toml"),
    )
    .unwrap();
    let mut opts = SimOptions::profile("small-gpu").unwrap();
    opts.set("prefix_cache", prefix_cache).unwrap();
    let sender = Arc::new(SimSender {
        sim: InProcess::start(opts).unwrap(),
        prompts: Mutex::new(Vec::new()),
    });
    let plan = Plan::new(&s, None).unwrap();
    assert_eq!(plan.planned(), Some(48));
    let data = run_all(sender.clone(), &plan).await;
    let sessions = data.sessions.clone().unwrap();
    assert_eq!((sessions.started, sessions.completed), (12, 12));
    let (summary, _) = summarize(&data, &Slo::default(), true);
    let prompts = std::mem::take(&mut *sender.prompts.lock().unwrap());
    (summary, prompts)
}

fn ttft_p50(s: &Summary, turn: u32) -> f64 {
    s.turns.iter().find(|t| t.turn == turn).unwrap().ttft_p50_ms
}

#[tokio::test(start_paused = true)]
async fn later_turns_ttft_drops_with_the_prefix_cache_and_grows_without_it() {
    let (on, prompts) = conversation("on").await;
    let (off, _) = conversation("off").await;
    assert_eq!(on.turns.len(), 4);
    for t in &on.turns {
        assert_eq!((t.sent, t.ok), (12, 12), "turn {}", t.turn);
    }
    // The history grows turn by turn: ≈ 300 words + a 16-token reply + the template each.
    let grown = |s: &Summary, t: usize| s.turns[t].prompt_tokens_mean.unwrap();
    assert!(grown(&on, 3) > grown(&on, 0) + 900.0);
    let (on1, on4) = (ttft_p50(&on, 1), ttft_p50(&on, 4));
    let (off1, off4) = (ttft_p50(&off, 1), ttft_p50(&off, 4));
    eprintln!("TTFT p50 turn 1 → 4: cache on {on1} → {on4} ms, off {off1} → {off4} ms");
    assert!(
        off4 > off1 * 1.5,
        "cache off: turn 4 TTFT {off4} ms should grow past turn 1's {off1} ms"
    );
    assert!(
        on4 < on1 * 1.5,
        "cache on: turn 4 TTFT {on4} ms should stay near turn 1's {on1} ms (only the new part is prefilled)"
    );
    assert!(
        on4 < off4 * 0.5,
        "turn 4 TTFT should drop with the cache on ({on4} ms) against off ({off4} ms)"
    );
    assert_eq!(on.counts.sent, 48);

    // Each turn's prompt is the last turn's prompt, then the reply received to it, then more:
    // the history is sent as received, so the server sees it as a prefix.
    let by_index: std::collections::BTreeMap<u64, (Vec<u64>, String)> =
        prompts.into_iter().map(|(i, p, r)| (i, (p, r))).collect();
    for s in 0..12u64 {
        for t in 1..4u64 {
            let (prev, reply) = &by_index[&(s * 1000 + t - 1)];
            let (now, _) = &by_index[&(s * 1000 + t)];
            // The previous prompt ends with the assistant header the reply follows.
            assert_eq!(&now[..prev.len()], &prev[..], "session {s} turn {t}");
            let reply_ids = &bench::sim::tokenize::text(reply)[1..]; // without <bos>
            assert_eq!(
                &now[prev.len()..prev.len() + reply_ids.len()],
                reply_ids,
                "session {s} turn {t} carries the reply received"
            );
        }
    }
}

/// Answers at once with a one-word reply, except that turn 2 of session 1 gets a 500.
struct FailingTurn;

impl Sender for FailingTurn {
    async fn send(&self, spec: RequestSpec, ctx: SendCtx) -> Sent {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let fail = spec.session == Some((1, 2));
        let now = Instant::now();
        Sent {
            record: common::fake_record(
                &spec,
                &ctx,
                common::Faked {
                    sent: ctx.intended,
                    outcome: if fail {
                        Outcome::Http(500)
                    } else {
                        Outcome::Ok
                    },
                    tokens: Some((now, now)),
                    prompt_tokens: 1,
                    output_tokens: 1,
                },
            ),
            itl_us: Default::default(),
            itl_token_us: Default::default(),
            chunk_tokens: Default::default(),
            reply: spec.keep_reply.then(|| Reply {
                text: "ok".into(),
                tool_calls: Vec::new(),
            }),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_turn_ends_its_session_and_every_turn_is_accounted_for() {
    let s = bench::config::scenario::parse(
        "name = \"c\"\n[workload]\ntype = \"conversation\"\nturns = 5\nuser_tokens = 3\noutput_tokens = 2\n[load]\nrate = 10\nsessions = 4\n",
        Path::new("c.toml"),
    )
    .unwrap();
    let plan = Plan::new(&s, None).unwrap();
    let data = run_all(Arc::new(FailingTurn), &plan).await;
    assert!(data.complete());
    let ss = data.sessions.clone().unwrap();
    assert_eq!(
        (
            ss.planned,
            ss.started,
            ss.completed,
            ss.ended_early,
            ss.turns_skipped
        ),
        (Some(4), 4, 3, 1, 3)
    );
    let (summary, _) = summarize(&data, &Slo::default(), true);
    let c = &summary.counts;
    // 20 planned turns = 17 sent + 3 skipped after the failure; none "not sent".
    assert_eq!((c.planned, c.sent, c.ok, c.not_sent), (Some(20), 17, 16, 0));
    assert_eq!(c.errors.get("http_500"), Some(&1));
    assert_eq!(summary.turns[1].sent, 4);
    assert_eq!(summary.turns[2].sent, 3);
}

#[test]
fn shards_keep_whole_sessions() {
    let s = bench::config::scenario::parse(
        "name = \"c\"\n[workload]\ntype = \"conversation\"\nturns = { dist = \"uniform\", min = 1, max = 6 }\nuser_tokens = 3\noutput_tokens = 2\n[load]\nrate = 10\nsessions = 9\n",
        Path::new("c.toml"),
    )
    .unwrap();
    let whole = Plan::new(&s, None).unwrap();
    let mut turns = 0;
    let mut seen = Vec::new();
    for k in 0..2 {
        let p = Plan::new(&s, Some(bench::model::shard::Shard { index: k, count: 2 })).unwrap();
        turns += p.planned().unwrap();
        for j in 0..p.planned_units().unwrap() {
            let bench::plan::Unit::Session(sess) = p.unit(p.index(j)) else {
                panic!("a conversation plan's units are sessions")
            };
            // The shard sends every turn of the session it owns.
            let whole_session = match whole.unit(sess.index) {
                bench::plan::Unit::Session(w) => w,
                _ => unreachable!(),
            };
            assert_eq!(sess.turns, whole_session.turns);
            seen.push(sess.index);
        }
    }
    seen.sort();
    assert_eq!(seen, (0..9).collect::<Vec<_>>());
    assert_eq!(Some(turns), whole.planned());
}

#[tokio::test(start_paused = true)]
async fn a_trace_session_sends_each_turn_its_delay_after_the_previous_reply() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.jsonl"),
        concat!(
            "{\"session_id\": \"a\", \"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1]}\n",
            "{\"timestamp\": 100, \"input_length\": 5, \"output_length\": 2}\n",
            "{\"session_id\": \"a\", \"delay\": 250, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": [1, 2]}\n",
        ),
    )
    .unwrap();
    let path = dir.path().join("t.toml");
    let s = bench::config::scenario::parse(
        "name = \"t\"\n[workload]\ntype = \"trace\"\npath = \"t.jsonl\"\nblock_tokens = 8\n[load]\n",
        &path,
    )
    .unwrap();
    let plan = Plan::new(&s, None).unwrap();
    assert_eq!((plan.planned_units(), plan.planned()), (Some(2), Some(3)));
    let data = run_all(Arc::new(FailingTurn), &plan).await;
    let mut r = data.records.clone();
    r.sort_by_key(|q| q.index);
    // Row indices, session and turn as the trace gives them.
    let got: Vec<_> = r
        .iter()
        .map(|q| (q.index, q.session, q.turn, q.input_tokens_target))
        .collect();
    assert_eq!(
        got,
        [
            (0, Some(0), Some(1), Some(10)),
            (1, Some(1), Some(1), Some(5)),
            (2, Some(0), Some(2), Some(20))
        ]
    );
    // Turn 1 at 0 ms, replied at 10 ms; turn 2 intended 250 ms later. Row 1 at 100 ms.
    assert_eq!(
        r.iter().map(|q| q.intended_us).collect::<Vec<_>>(),
        [0, 100_000, 260_000]
    );
    assert_eq!(data.sessions.unwrap().completed, 2);
}
