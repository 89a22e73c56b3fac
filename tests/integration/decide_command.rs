//! `retrystorm decide` end to end: the real binary, its output and its exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn retrystorm(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the retrystorm binary starts");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    pipe.write_all(stdin.unwrap_or("").as_bytes())
        .expect("stdin accepts the input");
    drop(pipe);
    child.wait_with_output().expect("retrystorm finishes")
}

/// Runs `decide` with the given flags and returns its one line of output.
fn decide(flags: &[&str]) -> String {
    let mut args = vec!["decide"];
    args.extend_from_slice(flags);
    let output = retrystorm(&args, None);
    assert!(
        output.status.success(),
        "decide {flags:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("output is UTF-8")
}

const WORKED_EXAMPLE: [&str; 11] = [
    "--method",
    "POST",
    "--status",
    "503",
    "--attempt",
    "2",
    "--now-ms",
    "1000",
    "--deadline-ms",
    "3000",
    "--idempotency-key",
];

#[test]
fn the_articles_worked_example() {
    assert_eq!(
        decide(&WORKED_EXAMPLE),
        "{\"retry\":true,\"delay_ms\":200,\"backoff_ms\":400}\n"
    );
}

#[test]
fn every_reason_through_the_command_line() {
    let example = &WORKED_EXAMPLE[..10]; // without --idempotency-key
    let with = |extra: &[&str]| {
        let mut flags = example.to_vec();
        flags.extend_from_slice(extra);
        decide(&flags)
    };
    let reason = |name: &str| format!("{{\"retry\":false,\"reason\":\"{name}\"}}\n");
    assert_eq!(with(&[]), reason("unknown-result"));
    assert_eq!(
        with(&["--idempotency-key", "--status", "401"]),
        reason("not-transient")
    );
    assert_eq!(
        with(&["--status-endpoint", "--attempt", "1.5"]),
        reason("invalid-attempt")
    );
    assert_eq!(
        with(&["--idempotency-key", "--attempt", "3"]),
        reason("max-attempts")
    );
    assert_eq!(
        with(&["--idempotency-key", "--now-ms", "NaN"]),
        reason("invalid-delay")
    );
    assert_eq!(
        with(&["--idempotency-key", "--deadline-ms", "inf"]),
        reason("invalid-delay")
    );
    assert_eq!(
        with(&["--idempotency-key", "--retry-after-ms", "-1"]),
        reason("invalid-retry-after")
    );
    assert_eq!(
        with(&["--idempotency-key", "--retry-after-ms", "2000"]),
        reason("deadline-exhausted")
    );
}

#[test]
fn strategies_and_retry_after_modes_are_selectable() {
    let with = |extra: &[&str]| {
        let mut flags = WORKED_EXAMPLE.to_vec();
        flags.extend_from_slice(extra);
        decide(&flags)
    };
    assert_eq!(
        with(&["--jitter", "none"]),
        "{\"retry\":true,\"delay_ms\":400,\"backoff_ms\":400}\n"
    );
    assert_eq!(
        with(&["--jitter", "equal"]),
        "{\"retry\":true,\"delay_ms\":300,\"backoff_ms\":400}\n"
    );
    // Retry-After 1 s as a header, honoured with a spread: 1000 + floor(0.5 * 500).
    assert_eq!(
        with(&[
            "--retry-after-header",
            "1",
            "--retry-after-mode",
            "honor-jittered"
        ]),
        "{\"retry\":true,\"delay_ms\":1250,\"backoff_ms\":400}\n"
    );
}

#[test]
fn batch_answers_each_line_and_flags_the_bad_ones() {
    let input = [
        r#"{"method":"POST","status":503,"attempt":2,"now_ms":1000,"deadline_ms":3000,"random":0.5,"idempotency_key":true}"#,
        r#"{"method":"POST","status":503,"attempt":2,"now_ms":1000,"deadline_ms":3000}"#,
        r#"{"method":"GET","status":429,"attempt":0,"now_ms":0,"deadline_ms":5000,"retry_after_ms":1500.5}"#,
        r#"{"method":"GET","status":503,"attempt":0,"now_ms":0,"deadline_ms":5000,"jiter":"full"}"#,
        r#"{"method": "GET", "#,
        r#"{"method":"GET","status":503,"attempt":0,"now_ms":"NaN","deadline_ms":5000}"#,
    ]
    .join("\n");
    let output = retrystorm(&["decide", "--batch"], Some(&input));
    assert_eq!(
        output.status.code(),
        Some(1),
        "a bad line makes the exit code 1"
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let expected = [
        r#"{"retry":true,"delay_ms":200,"backoff_ms":400}"#,
        r#"{"retry":false,"reason":"unknown-result"}"#,
        r#"{"retry":true,"delay_ms":1500.5,"backoff_ms":100}"#,
        r#"{"line":4,"error":"unknown field `jiter` (did you mean `jitter`?)"}"#,
        r#"{"line":5,"error":"column 18: not valid JSON: EOF while parsing a value"}"#,
        r#"{"retry":false,"reason":"invalid-delay"}"#,
    ];
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("2 of 6 lines could not be read"),
        "{stderr}"
    );
}

#[test]
fn a_clean_batch_exits_zero() {
    let input = "{\"method\":\"GET\",\"transport_error\":true,\"attempt\":0,\"now_ms\":0,\"deadline_ms\":1000}\n";
    let output = retrystorm(&["decide", "--batch"], Some(input));
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "{\"retry\":true,\"delay_ms\":50,\"backoff_ms\":100}\n"
    );
}

#[test]
fn usage_errors_name_the_flag_and_exit_two() {
    let missing = retrystorm(&["decide", "--method", "GET", "--attempt", "0"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--now-ms"));

    let mut flags = vec!["decide"];
    flags.extend_from_slice(&WORKED_EXAMPLE);
    flags.extend_from_slice(&["--jitter", "ful"]);
    let typo = retrystorm(&flags, None);
    assert_eq!(typo.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&typo.stderr).contains("did you mean `full`?"));

    let mixed = retrystorm(&["decide", "--batch", "--method", "GET"], None);
    assert_eq!(mixed.status.code(), Some(2));
}

/// HTTP method names are case-sensitive (RFC 9110 §9.1), and the decision reads only whether
/// one is idempotent: `post` used to be answered `unknown-result` as if it were a method no
/// client can repeat. An unknown method is now a usage error (exit 2) that lists the valid
/// methods and gives the upper-case spelling; a batch line with one gets an error line.
#[test]
fn an_unknown_method_is_refused_with_the_valid_list() {
    let mut flags = vec!["decide"];
    flags.extend_from_slice(&WORKED_EXAMPLE);
    flags[2] = "post";
    let refused = retrystorm(&flags, None);
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("did you mean `POST`?"), "{stderr}");
    assert!(
        stderr.contains("GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH"),
        "{stderr}"
    );

    let line = r#"{"method":"post","status":503,"attempt":0,"now_ms":0,"deadline_ms":1000}"#;
    let batch = retrystorm(&["decide", "--batch"], Some(&format!("{line}\n")));
    assert_eq!(batch.status.code(), Some(1));
    let answer = String::from_utf8(batch.stdout).unwrap();
    assert!(
        answer.starts_with(
            r#"{"line":1,"error":"field `method`: unknown HTTP method \"post\"; methods are case-sensitive"#
        ),
        "{answer}"
    );
}

/// A failed attempt got either a response (`--status`) or none (`--transport-error`): with
/// neither, the procedure used to answer `not-transient` to a question that was never asked.
/// It is a usage error (exit 2) naming both flags, and nothing is printed on stdout.
#[test]
fn decide_without_a_status_or_a_transport_error_is_refused() {
    let refused = retrystorm(
        &[
            "decide",
            "--method",
            "GET",
            "--attempt",
            "0",
            "--now-ms",
            "0",
            "--deadline-ms",
            "1000",
        ],
        None,
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--status N") && stderr.contains("--transport-error"),
        "{stderr}"
    );
}
