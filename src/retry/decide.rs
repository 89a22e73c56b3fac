//! The `decide` command's formats: one case in (flags or a JSON object), one JSON line out.
//!
//! `retrystorm decide` runs the retry decision once, so that an engineer can ask "what would the
//! article's client do here?" and a team can check its own table of cases with `--batch`: JSON
//! lines in, one result line per input line, in order. A line that cannot be read gets an error
//! line naming its number; the other lines are still answered.
//!
//! Input fields (snake_case, the same names as the command's flags):
//!
//! | field | type | default |
//! |---|---|---|
//! | `method` | string, case-sensitive: one of [`crate::retry::decision::HTTP_METHODS`] | required |
//! | `attempt`, `now_ms`, `deadline_ms` | number | required |
//! | `status` | number or null | none |
//! | `transport_error`, `idempotency_key`, `status_endpoint` | boolean | false |
//! | `base_ms`, `cap_ms`, `max_attempts`, `random` | number | 100, 2000, 3, 0.5 |
//! | `multiplier` | number | 2 |
//! | `retry_after_ms` | number or null | none |
//! | `retry_after_header` | string: a Retry-After value, delay-seconds or HTTP-date | none |
//! | `previous_delay_ms` | number or null | none |
//! | `retry_after_random` | number | 0.5 |
//! | `jitter` | `none`, `full`, `equal`, `decorrelated`, `grpc` | `full` |
//! | `retry_after_mode` | `honor`, `ignore`, `honor-jittered`, `pushback` | `honor` |
//!
//! Numbers follow the article's JavaScript semantics. JSON has no NaN or infinity, so a numeric
//! field also accepts the strings `"NaN"`, `"inf"`, `"-inf"` (and `"Infinity"`, `"-Infinity"`),
//! and `null` in a numeric field behaves as it does in the article's code: not a number, so it
//! fails the check that reads it (`null` status, Retry-After or previous delay means "none").
//! An HTTP-date in `retry_after_header` is measured from `now_ms` read as Unix time in
//! milliseconds; a header that cannot be parsed makes Retry-After invalid (the decision then
//! says `invalid-retry-after`, unless the mode ignores it) and the result line carries
//! `retry_after_error` saying why.
//!
//! Output numbers are printed as JavaScript prints them (`200`, not `200.0`), so results can be
//! compared with the article's `JSON.stringify` byte for byte.

use std::fmt;
use std::io::{self, BufRead, Write};

use serde_json::{Map, Value};

use crate::base::suggest::did_you_mean;
use crate::retry::backoff::Jitter;
use crate::retry::decision::{Decision, RetryInput, known_method, plan_retry};
use crate::retry::retry_after::{RetryAfterError, RetryAfterMode, parse_retry_after};

/// Every input field, in the order of the table above.
pub const FIELDS: [&str; 19] = [
    "method",
    "attempt",
    "now_ms",
    "deadline_ms",
    "status",
    "transport_error",
    "idempotency_key",
    "status_endpoint",
    "base_ms",
    "cap_ms",
    "max_attempts",
    "random",
    "multiplier",
    "retry_after_ms",
    "retry_after_header",
    "previous_delay_ms",
    "retry_after_random",
    "jitter",
    "retry_after_mode",
];

/// One question for the decision procedure.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The procedure's inputs. `retry_after_ms` may be replaced by the parsed header.
    pub input: RetryInput,
    /// A raw Retry-After header value, parsed when the case is decided.
    pub retry_after_header: Option<String>,
    /// How the backoff is spread.
    pub jitter: Jitter,
    /// How Retry-After is treated.
    pub retry_after_mode: RetryAfterMode,
}

/// The decision for a case, and why its Retry-After header was unusable, if it was.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// What the procedure decided.
    pub decision: Decision,
    /// The parse error of `retry_after_header`.
    pub retry_after_error: Option<RetryAfterError>,
}

impl Case {
    /// Parses the header, if any, and runs the decision procedure.
    pub fn decide(&self) -> Outcome {
        let mut input = self.input;
        let mut retry_after_error = None;
        if let Some(header) = &self.retry_after_header {
            match parse_retry_after(header, input.now_ms) {
                Ok(delay_ms) => input.retry_after_ms = Some(delay_ms),
                Err(error) => {
                    // Unusable, as a non-numeric value is in the article: never a wait.
                    input.retry_after_ms = Some(f64::NAN);
                    retry_after_error = Some(error);
                }
            }
        }
        Outcome {
            decision: plan_retry(&input, &self.jitter, self.retry_after_mode),
            retry_after_error,
        }
    }
}

impl Outcome {
    /// The result as one line of JSON, without the newline:
    /// `{"retry":true,"delay_ms":200,"backoff_ms":400}` or
    /// `{"retry":false,"reason":"unknown-result"}`.
    pub fn to_json(&self) -> String {
        let mut line = match self.decision {
            Decision::Retry {
                delay_ms,
                backoff_ms,
            } => format!(
                r#"{{"retry":true,"delay_ms":{},"backoff_ms":{}"#,
                js_number(delay_ms),
                js_number(backoff_ms)
            ),
            Decision::Stop(reason) => format!(r#"{{"retry":false,"reason":"{reason}""#),
        };
        if let Some(error) = &self.retry_after_error {
            line.push_str(r#","retry_after_error":"#);
            line.push_str(&json_string(&error.to_string()));
        }
        line.push('}');
        line
    }
}

/// Why one batch line could not be read as a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseError {
    /// The line is empty or only white space.
    Empty,
    /// The line is not JSON; `column` is 1-based.
    Json { column: usize, message: String },
    /// The line is JSON but not an object.
    NotAnObject,
    /// A field that has no default is missing.
    Missing(&'static str),
    /// A field this format does not have.
    Unknown(String),
    /// A field of the wrong type or with an invalid value.
    Invalid {
        field: &'static str,
        message: String,
    },
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaseError::Json { column, message } => {
                write!(f, "column {column}: not valid JSON: {message}")
            }
            CaseError::Empty => write!(f, "empty line; expected a JSON object"),
            CaseError::NotAnObject => write!(
                f,
                "expected a JSON object such as {{\"method\":\"GET\",\"status\":503,\"attempt\":0,\"now_ms\":0,\"deadline_ms\":1000}}"
            ),
            CaseError::Missing(field) => write!(f, "missing required field `{field}`"),
            CaseError::Unknown(field) => {
                write!(f, "unknown field `{field}`")?;
                match did_you_mean(field, FIELDS) {
                    Some(near) => write!(f, " (did you mean `{near}`?)"),
                    None => write!(f, "; valid fields: {}", FIELDS.join(", ")),
                }
            }
            CaseError::Invalid { field, message } => write!(f, "field `{field}`: {message}"),
        }
    }
}

impl std::error::Error for CaseError {}

/// Reads one JSON line into a case.
pub fn parse_case(line: &str) -> Result<Case, CaseError> {
    if line.trim().is_empty() {
        return Err(CaseError::Empty);
    }
    let value: Value = serde_json::from_str(line).map_err(|error| {
        let full = error.to_string();
        let suffix = format!(" at line {} column {}", error.line(), error.column());
        CaseError::Json {
            column: error.column(),
            message: full.strip_suffix(&suffix).unwrap_or(&full).to_string(),
        }
    })?;
    let Value::Object(object) = value else {
        return Err(CaseError::NotAnObject);
    };
    if let Some(unknown) = object.keys().find(|key| !FIELDS.contains(&key.as_str())) {
        return Err(CaseError::Unknown(unknown.clone()));
    }
    let fields = Fields(&object);
    let method = fields
        .string("method")?
        .ok_or(CaseError::Missing("method"))?;
    known_method(&method).map_err(|message| Fields::invalid("method", message))?;
    let mut input = RetryInput::new(
        &method,
        fields.required_number("attempt")?,
        fields.required_number("now_ms")?,
        fields.required_number("deadline_ms")?,
    );
    input.status = fields.optional_number("status")?;
    input.transport_error = fields.flag("transport_error")?;
    input.idempotency_key = fields.flag("idempotency_key")?;
    input.status_endpoint = fields.flag("status_endpoint")?;
    input.base_ms = fields.number("base_ms")?.unwrap_or(input.base_ms);
    input.cap_ms = fields.number("cap_ms")?.unwrap_or(input.cap_ms);
    input.max_attempts = fields.number("max_attempts")?.unwrap_or(input.max_attempts);
    input.random = fields.number("random")?.unwrap_or(input.random);
    input.multiplier = fields.number("multiplier")?.unwrap_or(input.multiplier);
    input.retry_after_ms = fields.optional_number("retry_after_ms")?;
    input.previous_delay_ms = fields.optional_number("previous_delay_ms")?;
    input.retry_after_random = fields
        .number("retry_after_random")?
        .unwrap_or(input.retry_after_random);
    let retry_after_header = fields.string("retry_after_header")?;
    if retry_after_header.is_some() && input.retry_after_ms.is_some() {
        return Err(CaseError::Invalid {
            field: "retry_after_header",
            message: "give either `retry_after_ms` or `retry_after_header`, not both".into(),
        });
    }
    Ok(Case {
        input,
        retry_after_header,
        jitter: fields.parsed("jitter")?.unwrap_or(Jitter::Full),
        retry_after_mode: fields.parsed("retry_after_mode")?.unwrap_or_default(),
    })
}

/// Typed access to the fields of one input object.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn invalid(field: &'static str, message: impl Into<String>) -> CaseError {
        CaseError::Invalid {
            field,
            message: message.into(),
        }
    }

    /// A number with the article's meaning of `null` (not a number) and the strings that spell
    /// non-finite values. `None` when absent.
    fn number(&self, field: &'static str) -> Result<Option<f64>, CaseError> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(f64::NAN)),
            Some(Value::Number(number)) => Ok(number.as_f64()),
            Some(Value::String(text)) => match text.parse::<f64>() {
                Ok(value) if !value.is_finite() => Ok(Some(value)),
                _ => Err(Self::invalid(
                    field,
                    format!(
                        "expected a number, got the string {}; only \"NaN\", \"inf\" and \"-inf\" may be written as strings",
                        json_string(text)
                    ),
                )),
            },
            Some(other) => Err(Self::invalid(
                field,
                format!("expected a number, got {}", kind(other)),
            )),
        }
    }

    fn required_number(&self, field: &'static str) -> Result<f64, CaseError> {
        self.number(field)?.ok_or(CaseError::Missing(field))
    }

    /// A number where `null` means "none", like the article's `status = null`.
    fn optional_number(&self, field: &'static str) -> Result<Option<f64>, CaseError> {
        match self.0.get(field) {
            Some(Value::Null) => Ok(None),
            _ => self.number(field),
        }
    }

    /// A boolean flag; absent or `null` is false, as in the article's code.
    fn flag(&self, field: &'static str) -> Result<bool, CaseError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(flag)) => Ok(*flag),
            Some(other) => Err(Self::invalid(
                field,
                format!("expected true or false, got {}", kind(other)),
            )),
        }
    }

    fn string(&self, field: &'static str) -> Result<Option<String>, CaseError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(Self::invalid(
                field,
                format!("expected a string, got {}", kind(other)),
            )),
        }
    }

    /// A string naming one of a fixed set of values.
    fn parsed<T>(&self, field: &'static str) -> Result<Option<T>, CaseError>
    where
        T: std::str::FromStr,
        T::Err: fmt::Display,
    {
        self.string(field)?
            .map(|name| {
                name.parse()
                    .map_err(|error: T::Err| Self::invalid(field, error.to_string()))
            })
            .transpose()
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What a batch run saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchSummary {
    /// Lines answered with a decision.
    pub decided: usize,
    /// Lines answered with an error.
    pub errors: usize,
}

/// The longest line `--batch` reads as a case: a case is a few hundred bytes.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// One line of input, as far as it could be read.
enum Line {
    Text(String),
    TooLong,
    NotUtf8(usize),
}

/// Reads the next line (without its `\n` or `\r\n`), keeping at most [`MAX_LINE_BYTES`] of it;
/// `None` at the end of the input. A longer line, however long, is skipped to its end in the
/// same memory and reported as [`Line::TooLong`], so that the lines after it are answered too
/// (an input that never ends a line, as `/dev/zero`, is read for as long as it lasts, as any
/// filter reads an endless input, without growing).
fn next_line(input: &mut impl BufRead, buffer: &mut Vec<u8>) -> io::Result<Option<Line>> {
    buffer.clear();
    let (mut read, mut seen_any, mut last) = (0usize, false, None);
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            break;
        }
        seen_any = true;
        let (chunk, used, ended) = match available.iter().position(|byte| *byte == b'\n') {
            Some(end) => (&available[..end], end + 1, true),
            None => (available, available.len(), false),
        };
        read += chunk.len();
        last = chunk.last().copied().or(last);
        // One byte more than a line may have: the `\r` of a `\r\n`.
        if buffer.len() + chunk.len() <= MAX_LINE_BYTES + 1 {
            buffer.extend_from_slice(chunk);
        }
        input.consume(used);
        if ended {
            break;
        }
    }
    if !seen_any {
        return Ok(None);
    }
    if read - usize::from(last == Some(b'\r')) > MAX_LINE_BYTES {
        return Ok(Some(Line::TooLong));
    }
    if buffer.last() == Some(&b'\r') {
        buffer.pop();
    }
    Ok(Some(match std::str::from_utf8(buffer) {
        Ok(text) => Line::Text(text.to_string()),
        Err(error) => Line::NotUtf8(error.valid_up_to()),
    }))
}

/// Answers every line of `input` with one line of `output`: the decision, or
/// `{"line":N,"error":"..."}` for a line that is not a valid case (N counts from 1): not JSON,
/// not UTF-8, or longer than [`MAX_LINE_BYTES`].
pub fn run_batch(mut input: impl BufRead, mut output: impl Write) -> io::Result<BatchSummary> {
    let mut summary = BatchSummary::default();
    let mut buffer = Vec::new();
    let mut index = 0;
    while let Some(line) = next_line(&mut input, &mut buffer)? {
        index += 1;
        let parsed = match line {
            Line::Text(text) => parse_case(&text).map_err(|error| error.to_string()),
            Line::TooLong => Err(format!(
                "the line is longer than {MAX_LINE_BYTES} bytes; a case is one JSON object"
            )),
            Line::NotUtf8(at) => Err(format!("not UTF-8 text (bad byte at {at})")),
        };
        match parsed {
            Ok(case) => {
                summary.decided += 1;
                writeln!(output, "{}", case.decide().to_json())?;
            }
            Err(error) => {
                summary.errors += 1;
                writeln!(
                    output,
                    r#"{{"line":{index},"error":{}}}"#,
                    json_string(&error)
                )?;
            }
        }
    }
    output.flush()?;
    Ok(summary)
}

fn json_string(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// Formats a number as JavaScript's `Number.prototype.toString` (and so `JSON.stringify`) does:
/// `200`, `150.5`, `1e+21`, `1e-7`; NaN and infinities become `null` as in JSON.
fn js_number(value: f64) -> String {
    if !value.is_finite() {
        return "null".to_string();
    }
    if value == 0.0 {
        return "0".to_string();
    }
    // Rust's `{:e}` prints the shortest digits that round-trip, like JavaScript.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always has an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i32 = exponent.parse().expect("`{:e}` exponent is an integer");
    let k = digits.len() as i32;
    let n = exponent + 1; // the decimal point sits after n digits
    let sign = if value < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let exponent_sign = if n > 0 { "+" } else { "-" };
        let fraction = if k > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        format!(
            "{}{fraction}e{exponent_sign}{}",
            &digits[..1],
            (n - 1).abs()
        )
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::decision::StopReason;

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        let cases = [
            (200.0, "200"),
            (-0.0, "0"),
            (150.5, "150.5"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (1.5e-10, "1.5e-10"),
            (-2.25, "-2.25"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::NAN, "null"),
        ];
        for (value, expected) in cases {
            assert_eq!(js_number(value), expected);
        }
    }

    #[test]
    fn the_worked_example_as_a_json_line() {
        let line = r#"{"method":"POST","status":503,"attempt":2,"now_ms":1000,"deadline_ms":3000,"random":0.5,"idempotency_key":true}"#;
        let outcome = parse_case(line).unwrap().decide();
        assert_eq!(
            outcome.to_json(),
            r#"{"retry":true,"delay_ms":200,"backoff_ms":400}"#
        );
    }

    #[test]
    fn null_and_non_finite_spellings_follow_the_article() {
        let base = r#""method":"GET","status":503,"attempt":0,"deadline_ms":1000"#;
        let decide = |extra: &str| {
            parse_case(&format!("{{{base},{extra}}}"))
                .unwrap()
                .decide()
                .decision
        };
        let stop = Decision::Stop;
        assert_eq!(decide(r#""now_ms":"NaN""#), stop(StopReason::InvalidDelay));
        assert_eq!(decide(r#""now_ms":null"#), stop(StopReason::InvalidDelay));
        assert_eq!(
            decide(r#""now_ms":0,"cap_ms":"-inf""#),
            stop(StopReason::InvalidDelay)
        );
        assert_eq!(
            decide(r#""now_ms":0,"retry_after_ms":"Infinity""#),
            stop(StopReason::InvalidRetryAfter)
        );
        assert_eq!(
            decide(r#""now_ms":0,"max_attempts":null"#),
            stop(StopReason::InvalidAttempt)
        );
        assert!(matches!(
            decide(r#""now_ms":0,"retry_after_ms":null,"status":503"#),
            Decision::Retry { .. }
        ));
    }

    #[test]
    fn retry_after_headers_are_parsed_against_now() {
        let line = r#"{"method":"GET","status":429,"attempt":0,"now_ms":784111775000,"deadline_ms":784111790000,"retry_after_header":"Sun, 06 Nov 1994 08:49:37 GMT"}"#;
        assert_eq!(
            parse_case(line).unwrap().decide().to_json(),
            r#"{"retry":true,"delay_ms":2000,"backoff_ms":100}"#
        );
        let bad = r#"{"method":"GET","status":429,"attempt":0,"now_ms":0,"deadline_ms":9000,"retry_after_header":"-3"}"#;
        let outcome = parse_case(bad).unwrap().decide();
        assert_eq!(
            outcome.decision,
            Decision::Stop(StopReason::InvalidRetryAfter)
        );
        assert!(
            outcome
                .to_json()
                .starts_with(r#"{"retry":false,"reason":"invalid-retry-after","retry_after_error":"Retry-After `-3` is neither"#)
        );
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let cases = [
            (
                r#"{"method":"GET""#,
                "column 15: not valid JSON: EOF while parsing an object",
            ),
            ("[1,2]", "expected a JSON object"),
            (
                r#"{"attempt":0,"now_ms":0,"deadline_ms":1}"#,
                "missing required field `method`",
            ),
            (
                r#"{"method":"GET","now_ms":0,"deadline_ms":1}"#,
                "missing required field `attempt`",
            ),
            (
                r#"{"method":"GET","atempt":0}"#,
                "unknown field `atempt` (did you mean `attempt`?)",
            ),
            (
                r#"{"method":"GET","attempt":"1","now_ms":0,"deadline_ms":1}"#,
                r#"field `attempt`: expected a number, got the string "1""#,
            ),
            (
                r#"{"method":"GET","attempt":0,"now_ms":0,"deadline_ms":1,"idempotency_key":1}"#,
                "field `idempotency_key`: expected true or false, got a number",
            ),
            (
                r#"{"method":"GET","attempt":0,"now_ms":0,"deadline_ms":1,"jitter":"decorelated"}"#,
                "field `jitter`: unknown jitter `decorelated` (did you mean `decorrelated`?)",
            ),
            (
                r#"{"method":"GET","attempt":0,"now_ms":0,"deadline_ms":1,"retry_after_ms":1,"retry_after_header":"1"}"#,
                "not both",
            ),
        ];
        for (line, expected) in cases {
            let message = parse_case(line).unwrap_err().to_string();
            assert!(message.contains(expected), "{line}: {message}");
        }
    }

    #[test]
    fn batch_answers_every_line_in_order() {
        let input = concat!(
            r#"{"method":"POST","status":503,"attempt":2,"now_ms":1000,"deadline_ms":3000,"idempotency_key":true}"#,
            "\n",
            "not json\n",
            "\n",
            r#"{"method":"POST","status":503,"attempt":2,"now_ms":1000,"deadline_ms":3000}"#,
            "\n",
        );
        let lines = batch_of_two_and_two(input.as_bytes());
        assert_eq!(
            lines,
            [
                r#"{"retry":true,"delay_ms":200,"backoff_ms":400}"#,
                r#"{"line":2,"error":"column 2: not valid JSON: expected ident"}"#,
                r#"{"line":3,"error":"empty line; expected a JSON object"}"#,
                r#"{"retry":false,"reason":"unknown-result"}"#,
            ]
        );
    }

    /// The output lines of a batch that decides two lines and flags two.
    fn batch_of_two_and_two(input: &[u8]) -> Vec<String> {
        let mut output = Vec::new();
        let summary = run_batch(input, &mut output).unwrap();
        assert_eq!(
            summary,
            BatchSummary {
                decided: 2,
                errors: 2
            }
        );
        String::from_utf8(output)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Every line is answered, in order, even after a line that is not UTF-8 or is too long
    /// (each gets its numbered error).
    #[test]
    fn bad_bytes_and_long_lines_get_their_own_errors() {
        let case = br#"{"method":"GET","attempt":0,"now_ms":0,"deadline_ms":1000,"status":503}"#;
        let mut input = Vec::new();
        input.extend_from_slice(case);
        input.extend_from_slice(b"\n\xff\xfe{}\r\n");
        input.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
        input.push(b'\n');
        input.extend_from_slice(case);
        input.extend_from_slice(b"\r\n");
        let lines = batch_of_two_and_two(&input);
        assert_eq!(lines[0], lines[3]);
        assert_eq!(
            lines[1],
            r#"{"line":2,"error":"not UTF-8 text (bad byte at 0)"}"#
        );
        assert!(lines[2].starts_with(r#"{"line":3,"error":"the line is longer than 65536"#));
        // The limit is the line's, without its end: `\n` or `\r\n`.
        for end in [&b"\n"[..], b"\r\n"] {
            let mut input = case[..case.len() - 1].to_vec();
            input.resize(MAX_LINE_BYTES - 1, b' ');
            input.push(b'}');
            input.extend_from_slice(end);
            let mut output = Vec::new();
            let summary = run_batch(&input[..], &mut output).unwrap();
            assert_eq!(summary.decided, 1, "{}", String::from_utf8_lossy(&output));
        }
    }

    /// A line of 17 MiB (over the 16 MiB at which `--batch` used to stop reading, issue 23) is
    /// answered with its error and the line after it with its decision, as docs/reference.md
    /// promises every line is; the long line is skipped in the reader's buffer, not kept (the
    /// line kept stays within one byte over [`MAX_LINE_BYTES`]).
    #[test]
    fn a_line_of_any_length_is_answered_and_the_next_one_too() {
        let case = br#"{"method":"GET","attempt":0,"now_ms":0,"deadline_ms":1000,"status":503}"#;
        let mut input = std::iter::repeat_n(0u8, 17 * 1024 * 1024).collect::<Vec<_>>();
        input.push(b'\n');
        input.extend_from_slice(case);
        input.push(b'\n');
        let mut reader = &input[..];
        let mut buffer = Vec::new();
        let first = next_line(&mut reader, &mut buffer).unwrap();
        assert!(matches!(first, Some(Line::TooLong)));
        assert!(buffer.len() <= MAX_LINE_BYTES + 1, "{}", buffer.len());
        let mut output = Vec::new();
        let summary = run_batch(&input[..], &mut output).unwrap();
        assert_eq!(
            summary,
            BatchSummary {
                decided: 1,
                errors: 1
            }
        );
        let output = String::from_utf8(output).unwrap();
        let lines: Vec<&str> = output.lines().collect();
        assert!(lines[0].starts_with(r#"{"line":1,"error":"the line is longer than 65536"#));
        assert!(lines[1].starts_with(r#"{"retry":true"#), "{}", lines[1]);
    }
}
