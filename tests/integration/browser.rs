//! `report.html`, a run's and a sweep's, in a real browser: headless Chromium opens the page
//! from its file, the test takes a screenshot and checks that it shows something, that the
//! page asked for nothing but itself (and `data:` URLs), that it raised no console error, and
//! that its tables fit the window's width with no name wrapped past two lines (a script
//! evaluated in the page measures them, `Runtime.evaluate`).
//!
//! Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: it reads
//! commands on its file descriptor 3 and writes answers and events on 4, each a JSON text ended
//! by a NUL byte), so the test needs no port, no WebSocket and no crate beyond `serde_json`. The
//! page's own target reports every request it makes (`Network.requestWillBeSent`,
//! `Network.webSocketCreated`), every console call (`Runtime.consoleAPICalled`), every uncaught
//! exception (`Runtime.exceptionThrown`) and the browser's own messages about it
//! (`Log.entryAdded`, such as a resource that failed to load); the browser's background
//! requests, which are not the page's, are not counted. `--host-resolver-rules` makes every host
//! name unresolvable, so a page that does ask for the network is caught without anything leaving
//! the machine.
//!
//! Chromium is Debian's `chromium` package at `/usr/bin/chromium`, which `.ci/run` installs.
//! Without it these tests skip, saying so on stderr, so that `cargo test` passes on a machine
//! with only the Rust toolchain; `RETRYSTORM_BROWSER_TESTS=1` (set by `.ci/run`) makes a missing
//! Chromium a failure instead.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Where Debian's `chromium` package puts the browser.
const CHROMIUM: &str = "/usr/bin/chromium";

/// The environment variable that makes a missing Chromium a failure rather than a skip.
const REQUIRE: &str = "RETRYSTORM_BROWSER_TESTS";

/// Flags for headless Chromium as root on a machine without a network or a desktop: no sandbox
/// (root), no GPU, no first-run, sync, update or other background connections, and every host
/// name unresolvable, so nothing the page asks for leaves the machine (nor the few look-ups of
/// Google's account, update and time hosts that Chromium 156 still starts despite the other
/// flags, as its `--log-net-log` shows).
const FLAGS: [&str; 11] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-pipe",
];

/// The width of the window the page is shown in, in CSS pixels: the width issue 24 reads the
/// reports at, at which every table must fit ([`LAYOUT_CHECK`]).
const WIDTH: u64 = 1400;

/// The viewport's height while the page loads; the screenshot then takes the whole page, up to
/// [`MAX_HEIGHT`].
const HEIGHT: u64 = 2000;

/// The tallest screenshot taken.
const MAX_HEIGHT: u64 = 12_000;

/// How long one exchange with Chromium (starting, loading a page, a screenshot) may take on a
/// busy two-core machine before the test gives up.
const PATIENCE: Duration = Duration::from_secs(90);

/// At least this share of a screenshot's pixels must differ from its commonest colour (the
/// background). The bundled reports give 0.26 (thundering-herd) and 0.24 (retry-layers), a
/// blank page 0, and a page with one heading 0.0006.
const MIN_INK: f64 = 0.02;

/// A screenshot must have at least this many distinct colours. The bundled reports give
/// thousands (14,000 and 8,700: the charts' lines and their anti-aliasing), a blank page 1, and
/// a page with one heading about 220 (the anti-aliasing of its letters).
const MIN_COLOURS: usize = 500;

/// What the page's layout gets wrong, as a JSON array of sentences, evaluated in the page: the
/// page or a table's box scrolls sideways (a table wider than the page hides its last
/// columns behind a scrollbar), or the first cell of a table's row (a policy's name) takes
/// more than two lines. The lines of a cell are its text's line boxes, told apart by their
/// tops.
const LAYOUT_CHECK: &str = r#"(() => {
  const problems = [];
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth) {
    problems.push(`the page scrolls sideways: ${page.scrollWidth} px wide in ${page.clientWidth}`);
  }
  document.querySelectorAll('table').forEach((table, index) => {
    const name = table.id || `table ${index + 1}`;
    const box = table.parentElement;
    if (box.scrollWidth > box.clientWidth) {
      problems.push(`${name} scrolls sideways: ${box.scrollWidth} px wide in ${box.clientWidth}`);
    }
    for (const row of table.rows) {
      const cell = row.cells[0];
      if (!cell || cell.tagName !== 'TD') continue;
      const range = document.createRange();
      range.selectNodeContents(cell);
      const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
      if (lines > 2) problems.push(`${name}: "${cell.textContent}" takes ${lines} lines`);
    }
  });
  return JSON.stringify(problems);
})()"#;

/// Chromium, or `None` after saying on stderr why the test skips.
fn chromium() -> Option<&'static Path> {
    let path = Path::new(CHROMIUM);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var(REQUIRE).as_deref() != Ok("1"),
        "{CHROMIUM} is not installed, and {REQUIRE}=1 requires the browser tests; install it with \
         `apt-get install -y chromium`"
    );
    // Straight to stderr, past the test harness's capture, so that the skip shows in `cargo test`.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: chromium not installed (set {REQUIRE}=1 to require it)"
    );
    None
}

fn fresh(name: &str) -> PathBuf {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("a test folder");
    folder
}

/// Runs `retrystorm` with `args` and `--out out`, which must succeed.
fn run_into(args: &[&str], out: &Path) {
    let mut args = args.to_vec();
    args.extend(["--out", out.to_str().unwrap()]);
    let output = crate::support::retrystorm(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs the bundled scenario `name` into `out` and gives its report's path.
fn report(name: &str, out: &Path) -> PathBuf {
    run_into(&["run", &format!("scenarios/{name}.toml")], out);
    out.join(name).join("report.html")
}

/// Runs a sweep of the bundled tuning scenario (two numeric keys and one more, so it has a
/// Pareto front and faceted heatmaps) into `out` and gives its report's path.
fn sweep_report(out: &Path) -> PathBuf {
    run_into(
        &[
            "sweep",
            "scenarios/tuning.toml",
            "--grid",
            "policy.base=50ms,200ms,800ms",
            "--grid",
            "policy.max_attempts=1..3",
            "--grid",
            "policy.jitter=none,full",
            "--seeds",
            "2",
            "--require",
            "success_rate>=0.95",
            "--minimize",
            "p99_ms",
        ],
        out,
    );
    out.join("tuning-sweep").join("report.html")
}

/// A `file://` URL for an absolute path.
fn file_url(path: &Path) -> String {
    let path = path.canonicalize().expect("the page exists");
    let mut url = String::from("file://");
    for byte in path.to_str().expect("a UTF-8 path").bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

// ---------------------------------------------------------------------------------------------
// The static check: what the HTML itself refers to.

/// The attributes whose value a browser loads.
const LOADING_ATTRIBUTES: [&str; 7] = [
    "src",
    "href",
    "srcset",
    "poster",
    "data",
    "action",
    "background",
];

/// Every reference in `html` that would make a browser load something other than the page:
/// `src`, `href` (also `xlink:href`) and similar attributes, CSS `url(...)` and `@import`,
/// other than a fragment (`#arrow`) or a `data:` URL; and any `http://`, `https://`, `ws://` or
/// `wss://` other than an SVG namespace (`xmlns="http://www.w3.org/2000/svg"`), which names the
/// language and is never fetched. A link (`<a href="https://...">`) loads nothing until it is
/// followed, so it is allowed.
fn external_references(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut found = Vec::new();
    let is_link = |at: usize| {
        let tag = lower[..at].rfind('<').map_or("", |start| &lower[start..at]);
        tag.starts_with("<a ") && !tag.contains('>')
    };
    let local =
        |value: &str| value.is_empty() || value.starts_with('#') || value.starts_with("data:");
    for attribute in LOADING_ATTRIBUTES {
        let pattern = format!("{attribute}=");
        for (at, _) in lower.match_indices(&pattern) {
            let before = lower[..at].chars().next_back().unwrap_or(' ');
            if !(before.is_ascii_whitespace() || before == ':') {
                continue;
            }
            let value = attribute_value(&html[at + pattern.len()..]);
            let link = attribute == "href" && before != ':' && is_link(at);
            if !(local(value.trim()) || link) {
                found.push(format!("{attribute}={value}"));
            }
        }
    }
    for (at, _) in lower.match_indices("url(") {
        let value = html[at + 4..].split(')').next().unwrap_or("");
        if !local(value.trim().trim_matches(['"', '\''])) {
            found.push(format!("url({value})"));
        }
    }
    if lower.contains("@import") {
        found.push("@import".into());
    }
    for scheme in ["http://", "https://", "ws://", "wss://"] {
        for (at, _) in lower.match_indices(scheme) {
            let before = &lower[..at];
            let namespace = before.ends_with("\"") && {
                let attribute = before[..before.len() - 1].trim_end_matches('=');
                let name_start = attribute
                    .rfind(|c: char| c.is_ascii_whitespace())
                    .map_or(0, |space| space + 1);
                let name = &attribute[name_start..];
                name == "xmlns" || name.starts_with("xmlns:")
            };
            let linked = before.ends_with("href=\"") && is_link(at);
            if !namespace && !linked {
                let end = html[at..]
                    .find(|c: char| c.is_ascii_whitespace() || "\"'<>)".contains(c))
                    .map_or(html.len(), |end| at + end);
                found.push(html[at..end].to_string());
            }
        }
    }
    found
}

/// An attribute's value at the start of `text` (just after its `=`), quoted or not.
fn attribute_value(text: &str) -> &str {
    match text.chars().next() {
        Some(quote @ ('"' | '\'')) => text[1..].split(quote).next().unwrap_or(""),
        _ => text
            .split(|c: char| c.is_ascii_whitespace() || c == '>')
            .next()
            .unwrap_or(""),
    }
}

// ---------------------------------------------------------------------------------------------
// The screenshot.

/// What a screenshot shows, roughly: its size, how much of it differs from the background and
/// how many colours it has.
#[derive(Debug)]
struct Ink {
    width: u32,
    height: u32,
    /// The share of pixels whose colour is not the commonest one.
    share: f64,
    colours: usize,
}

impl Ink {
    fn of(png: &[u8]) -> Ink {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(png));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().expect("a valid PNG");
        let mut pixels = vec![0; reader.output_buffer_size().expect("a sane size")];
        let info = reader.next_frame(&mut pixels).expect("a decodable frame");
        pixels.truncate(info.buffer_size());
        let samples = info.color_type.samples();
        let mut counts: HashMap<[u8; 3], usize> = HashMap::new();
        for pixel in pixels.chunks_exact(samples) {
            let colour = if samples >= 3 {
                [pixel[0], pixel[1], pixel[2]]
            } else {
                [pixel[0]; 3]
            };
            *counts.entry(colour).or_default() += 1;
        }
        let total = pixels.len() / samples;
        let background = counts.values().copied().max().unwrap_or(0);
        Ink {
            width: info.width,
            height: info.height,
            share: (total - background) as f64 / total.max(1) as f64,
            colours: counts.len(),
        }
    }

    /// Why the screenshot looks blank, or `None` if it shows a page's worth of content.
    fn blank(&self) -> Option<String> {
        (self.share < MIN_INK || self.colours < MIN_COLOURS).then(|| {
            format!(
                "looks blank: {:.4} of the pixels differ from the background (at least {MIN_INK} \
                 wanted), {} colours (at least {MIN_COLOURS} wanted)",
                self.share, self.colours
            )
        })
    }
}

/// Standard base64, as the DevTools protocol sends a screenshot.
fn base64_decode(text: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(text.len() / 4 * 3);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|&c| c != b'=') {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {:?}", char::from(c)),
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    bytes
}

// ---------------------------------------------------------------------------------------------
// Chromium over the DevTools protocol.

/// What Chromium saw while it showed one page.
struct Visit {
    /// Every URL the page asked for other than itself and `data:` URLs.
    requests: Vec<String>,
    /// Console errors and assertions, uncaught exceptions, and the browser's error messages about
    /// the page.
    errors: Vec<String>,
    /// Console and browser warnings: shown, not failed on.
    warnings: Vec<String>,
    /// What [`LAYOUT_CHECK`] found wrong with the page's layout at [`WIDTH`].
    layout: Vec<String>,
    /// The screenshot, a PNG of the whole page (up to [`MAX_HEIGHT`]) at [`WIDTH`].
    screenshot: Vec<u8>,
}

impl Visit {
    /// The requests, errors and layout problems, each said as such.
    fn faults(&self) -> Vec<String> {
        let requests = self.requests.iter().map(|url| format!("requested {url}"));
        let errors = self.errors.iter().map(|error| format!("error: {error}"));
        let layout = self
            .layout
            .iter()
            .map(|problem| format!("layout: {problem}"));
        requests.chain(errors).chain(layout).collect()
    }
}

/// A headless Chromium, spoken to over `--remote-debugging-pipe`.
struct Browser {
    child: Child,
    commands: ChildStdin,
    messages: Receiver<Value>,
    /// Events read while waiting for something else, oldest first.
    events: Vec<Value>,
    next_id: u64,
    /// Chromium's stderr, for the failure messages.
    log: PathBuf,
}

impl Browser {
    /// Starts Chromium with a new profile in `folder`.
    fn start(chromium: &Path, folder: &Path) -> Browser {
        let profile = folder.join("profile");
        let _ = std::fs::remove_dir_all(&profile);
        let log = folder.join("chromium.log");
        // The shell hands Chromium the pipes as descriptors 3 (commands) and 4 (answers and
        // events), as `--remote-debugging-pipe` wants, and its stdin and stdout as /dev/null.
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(r#"exec "$@" 3<&0 4>&1 </dev/null >/dev/null"#)
            .arg("sh")
            .arg(chromium)
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&log).expect("chromium.log"))
            .spawn()
            .expect("chromium starts");
        let commands = child.stdin.take().expect("a command pipe");
        let mut answers = BufReader::new(child.stdout.take().expect("an answer pipe"));
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut message = Vec::new();
            while answers
                .read_until(0, &mut message)
                .is_ok_and(|read| read > 0)
            {
                if message.last() == Some(&0) {
                    message.pop();
                }
                let Ok(value) = serde_json::from_slice::<Value>(&message) else {
                    break;
                };
                if sender.send(value).is_err() {
                    break;
                }
                message.clear();
            }
        });
        Browser {
            child,
            commands,
            messages,
            events: Vec::new(),
            next_id: 0,
            log,
        }
    }

    /// The next message from Chromium, within [`PATIENCE`] of `since`.
    fn message(&mut self, since: Instant, waiting_for: &str) -> Value {
        let left = PATIENCE.saturating_sub(since.elapsed());
        self.messages.recv_timeout(left).unwrap_or_else(|error| {
            panic!(
                "no answer from Chromium while waiting for {waiting_for} ({error}); its log is {}",
                self.log.display()
            )
        })
    }

    /// Sends a command (to the page's `session`, or to the browser) and gives its result.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut command = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            command["sessionId"] = session.into();
        }
        let mut bytes = serde_json::to_vec(&command).expect("JSON");
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .and_then(|()| self.commands.flush())
            .unwrap_or_else(|error| {
                panic!(
                    "Chromium took no command {method} ({error}); its log is {}",
                    self.log.display()
                )
            });
        let since = Instant::now();
        loop {
            let message = self.message(since, method);
            if message["id"] == id {
                assert!(
                    message.get("error").is_none(),
                    "{method} failed: {}",
                    message["error"]
                );
                return message["result"].clone();
            }
            if message.get("method").is_some() {
                self.events.push(message);
            }
        }
    }

    /// Waits for an event of the page's `session` for which `wanted` holds (it may have come
    /// already).
    fn wait_for(&mut self, session: &str, what: &str, wanted: impl Fn(&str, &Value) -> bool) {
        let matches = |event: &Value| {
            event["sessionId"] == session
                && wanted(event["method"].as_str().unwrap_or(""), &event["params"])
        };
        if self.events.iter().any(&matches) {
            return;
        }
        let since = Instant::now();
        loop {
            let message = self.message(since, what);
            let found = matches(&message);
            if message.get("method").is_some() {
                self.events.push(message);
            }
            if found {
                return;
            }
        }
    }

    /// Opens `page` in a new tab, waits until it has loaded and the network has been idle for
    /// half a second, takes a screenshot of the whole page, and closes the tab.
    fn visit(&mut self, page: &Path) -> Visit {
        let url = file_url(page);
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let target = target["targetId"].clone();
        let session = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        let session = session["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        let session = session.as_str();
        for domain in ["Page", "Network", "Runtime", "Log"] {
            self.call(Some(session), &format!("{domain}.enable"), json!({}));
        }
        self.call(
            Some(session),
            "Page.setLifecycleEventsEnabled",
            json!({ "enabled": true }),
        );
        self.viewport(session, HEIGHT);
        let navigation = self.call(Some(session), "Page.navigate", json!({ "url": url }));
        assert!(
            navigation.get("errorText").is_none(),
            "{url} did not open: {}",
            navigation["errorText"]
        );
        let loader = navigation["loaderId"].clone();
        for stage in ["load", "networkIdle"] {
            self.wait_for(session, stage, |method, params| {
                method == "Page.lifecycleEvent"
                    && params["name"] == stage
                    && params["loaderId"] == loader
            });
        }
        let layout = self.call(
            Some(session),
            "Runtime.evaluate",
            json!({ "expression": LAYOUT_CHECK, "returnByValue": true }),
        );
        let layout: Vec<String> = serde_json::from_str(
            layout["result"]["value"]
                .as_str()
                .expect("the layout check's answer"),
        )
        .expect("a JSON array of sentences");
        let metrics = self.call(Some(session), "Page.getLayoutMetrics", json!({}));
        let height = metrics["cssContentSize"]["height"]
            .as_f64()
            .expect("the page's height")
            .ceil() as u64;
        self.viewport(session, height.clamp(HEIGHT, MAX_HEIGHT));
        let screenshot = self.call(
            Some(session),
            "Page.captureScreenshot",
            json!({ "format": "png" }),
        );
        let screenshot = base64_decode(screenshot["data"].as_str().expect("a PNG"));
        self.call(None, "Target.closeTarget", json!({ "targetId": target }));

        let mut visit = Visit {
            requests: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            layout,
            screenshot,
        };
        for event in self.events.drain(..) {
            if event["sessionId"] != session {
                continue;
            }
            let params = &event["params"];
            match event["method"].as_str().unwrap_or("") {
                "Network.requestWillBeSent" => {
                    let requested = params["request"]["url"].as_str().unwrap_or("");
                    let itself = requested.split('#').next() == Some(url.as_str());
                    if !itself && !requested.starts_with("data:") {
                        visit.requests.push(requested.to_string());
                    }
                }
                "Network.webSocketCreated" => {
                    visit
                        .requests
                        .push(params["url"].as_str().unwrap_or("").to_string());
                }
                "Runtime.consoleAPICalled" => {
                    let args: Vec<String> = params["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|arg| match arg.get("value") {
                            Some(Value::String(text)) => text.clone(),
                            Some(value) => value.to_string(),
                            None => arg["description"].as_str().unwrap_or("?").to_string(),
                        })
                        .collect();
                    let kind = params["type"].as_str().unwrap_or("?");
                    let text = format!("console.{kind}: {}", args.join(" "));
                    match kind {
                        "error" | "assert" => visit.errors.push(text),
                        "warning" => visit.warnings.push(text),
                        _ => {}
                    }
                }
                "Runtime.exceptionThrown" => {
                    let details = &params["exceptionDetails"];
                    let text = details["exception"]["description"]
                        .as_str()
                        .or(details["text"].as_str())
                        .unwrap_or("an exception");
                    visit.errors.push(format!("uncaught: {text}"));
                }
                "Log.entryAdded" => {
                    let entry = &params["entry"];
                    let field = |name: &str| entry[name].as_str().unwrap_or("").to_string();
                    let text = format!(
                        "{} {}: {} ({})",
                        field("source"),
                        field("level"),
                        field("text"),
                        field("url")
                    );
                    match entry["level"].as_str() {
                        Some("error") => visit.errors.push(text),
                        Some("warning") => visit.warnings.push(text),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        visit
    }

    /// Shows the page in a viewport [`WIDTH`] wide and `height` high.
    fn viewport(&mut self, session: &str, height: u64) {
        self.call(
            Some(session),
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
    }
}

impl Drop for Browser {
    /// Asks Chromium to close, and ends it if it has not within a few seconds.
    fn drop(&mut self) {
        self.next_id += 1;
        let command = json!({ "id": self.next_id, "method": "Browser.close" });
        let mut bytes = serde_json::to_vec(&command).expect("JSON");
        bytes.push(0);
        let _ = self.commands.write_all(&bytes);
        let _ = self.commands.flush();
        let since = Instant::now();
        while since.elapsed() < Duration::from_secs(10) {
            if self.child.try_wait().is_ok_and(|status| status.is_some()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// The tests.

/// Runs the bundled scenario `name` and checks its report as [`check_page`] does; the
/// screenshot is kept as `browser-NAME/NAME.png` in the test's temporary folder.
fn check_report(name: &str) {
    let folder = fresh(&format!("browser-{name}"));
    let page = report(name, &folder.join("out"));
    check_page(name, &page, &folder);
}

/// Checks that the page's HTML refers to nothing outside it, then opens it in Chromium and
/// checks it loads nothing else, raises no error, lays out within [`WIDTH`] and shows a page's
/// worth of content; the screenshot is kept as `NAME.png` in `folder`.
fn check_page(name: &str, page: &Path, folder: &Path) {
    let html = std::fs::read_to_string(page).expect("the page");
    let references = external_references(&html);
    assert!(
        references.is_empty(),
        "{} refers to {references:?}",
        page.display()
    );
    let Some(chromium) = chromium() else {
        return;
    };
    let visit = Browser::start(chromium, folder).visit(page);
    let screenshot = folder.join(format!("{name}.png"));
    std::fs::write(&screenshot, &visit.screenshot).expect("the screenshot");
    let ink = Ink::of(&visit.screenshot);
    eprintln!(
        "{name}: screenshot {} ({}x{}, {:.3} inked, {} colours), warnings {:?}",
        screenshot.display(),
        ink.width,
        ink.height,
        ink.share,
        ink.colours,
        visit.warnings
    );
    let mut problems = visit.faults();
    problems.extend(ink.blank());
    assert!(
        problems.is_empty(),
        "{} in Chromium: {problems:#?}; screenshot {}",
        page.display(),
        screenshot.display()
    );
}

/// A single-service report (thundering-herd: the table and four charts) opens in a browser
/// without the network and without an error, and shows its content: the issue promises a page
/// that can be mailed and opened anywhere, and this is what a reader sees.
#[test]
fn a_single_service_report_shows_in_chromium_offline_without_errors() {
    check_report("thundering-herd");
}

/// A report of five policies whose names wrap (payments, where the summary table once hid its
/// recovery column behind a scrollbar and wrapped names to three lines) fits the page.
#[test]
fn a_report_of_five_policies_fits_the_page_in_chromium() {
    check_report("payments");
}

/// A topology's report (retry-layers: also the topology diagram, whose arrows use an SVG marker
/// by `url(#arrow)`, and a table per service) opens in a browser without the network and without
/// an error, and shows its content.
#[test]
fn a_topology_report_shows_in_chromium_offline_without_errors() {
    check_report("retry-layers");
}

/// A report of two operations (mixed-traffic: also its Operations table, a row per policy and
/// operation, twelve columns beside long policy names) fits the page in a browser, its names
/// wrapped to two lines at most, as a run's with one operation does.
#[test]
fn a_report_of_two_operations_fits_the_page_in_chromium() {
    check_report("mixed-traffic");
}

/// A sweep's report (the recommendation, the Pareto front and the heatmaps inline as SVG, the
/// table of points) opens in a browser without the network and without an error, fits the
/// page, and shows its content, as a run's does.
#[test]
fn a_sweep_report_shows_in_chromium_offline_without_errors() {
    let folder = fresh("browser-sweep");
    let page = sweep_report(&folder.join("out"));
    let html = std::fs::read_to_string(&page).expect("report.html");
    for part in [
        "<h2>Recommendation</h2>",
        "<h2>Pareto front</h2>",
        "<h2>Heatmaps</h2>",
        "<h2>Every point</h2>",
        "aria-label=\"tuning: Pareto front of policy",
    ] {
        assert!(html.contains(part), "the sweep's report lacks {part}");
    }
    check_page("tuning-sweep", &page, &folder);
}

/// The browser checks can fail: a console error, an uncaught exception, an image, a fetch, a
/// stylesheet's background and a WebSocket from the network, another local file, a table
/// wider than the page and a name that wraps to three lines, are each caught on a page of
/// their own, while a plain page of the same kind passes. Without this, a
/// detector that saw nothing would pass every report.
#[test]
fn the_browser_checks_catch_errors_and_requests() {
    let Some(chromium) = chromium() else {
        return;
    };
    let folder = fresh("browser-negative");
    std::fs::write(folder.join("other.txt"), "another file").expect("a file");
    let clean = "<h1>Fine</h1><p>Nothing here loads or fails.</p>\
                 <img src=\"data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==\">";
    let pages = [
        ("clean", clean, None),
        (
            "console-error",
            "<script>console.error('deliberate console error')</script>",
            Some(Caught::Error("console.error: deliberate console error")),
        ),
        (
            "exception",
            "<script>throw new Error('deliberate exception')</script>",
            Some(Caught::Error("uncaught: Error: deliberate exception")),
        ),
        (
            "image",
            "<img src=\"http://example.com/x.png\">",
            Some(Caught::Request("http://example.com/x.png")),
        ),
        (
            "fetch",
            "<script>fetch('https://example.com/data.json').catch(() => {})</script>",
            Some(Caught::Request("https://example.com/data.json")),
        ),
        (
            "stylesheet",
            "<style>body { background: url(https://example.com/bg.png) }</style><p>x</p>",
            Some(Caught::Request("https://example.com/bg.png")),
        ),
        (
            "websocket",
            "<script>new WebSocket('ws://example.com/socket')</script>",
            Some(Caught::Request("ws://example.com/socket")),
        ),
        (
            "local-file",
            "<iframe src=\"other.txt\"></iframe>",
            Some(Caught::Request("/browser-negative/other.txt")),
        ),
        (
            "wide-table",
            "<div style=\"overflow-x: auto\"><table id=\"wide\"><tr><td>policy</td>\
             <td style=\"min-width: 3000px\">a column wider than any window</td></tr></table></div>",
            Some(Caught::Layout("wide scrolls sideways")),
        ),
        (
            "tall-name",
            "<table id=\"names\"><tr><td style=\"width: 3ch\">every layer retries</td>\
             <td>1</td></tr></table>",
            Some(Caught::Layout(
                "names: \"every layer retries\" takes 3 lines",
            )),
        ),
    ];
    let mut browser = Browser::start(chromium, &folder);
    for (name, body, expected) in pages {
        let page = folder.join(format!("{name}.html"));
        std::fs::write(
            &page,
            format!(
                "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{name}</title></head>\
                 <body>{body}</body></html>"
            ),
        )
        .expect("a page");
        let visit = browser.visit(&page);
        eprintln!(
            "{name}: requests {:?}, errors {:?}",
            visit.requests, visit.errors
        );
        let (list, expected) = match expected {
            None => {
                assert!(visit.faults().is_empty(), "{name}: {:?}", visit.faults());
                continue;
            }
            Some(Caught::Request(url)) => (&visit.requests, url),
            Some(Caught::Error(text)) => (&visit.errors, text),
            Some(Caught::Layout(text)) => (&visit.layout, text),
        };
        assert!(
            list.iter()
                .any(|found| found.starts_with(expected) || found.ends_with(expected)),
            "{name}: {expected:?} not caught in {list:?}"
        );
        assert!(!visit.faults().is_empty(), "{name} passed");
    }
}

/// What a faulty page must be caught for.
enum Caught {
    /// A request for this URL (or one ending in it).
    Request(&'static str),
    /// An error whose text starts with this.
    Error(&'static str),
    /// A layout problem whose sentence starts with this.
    Layout(&'static str),
}

/// The blank check can fail: a blank page, and a page with a single heading, are both too
/// empty to pass for a report. Without this, a check that passed anything Chromium drew would
/// pass a report that failed to render.
#[test]
fn the_blank_check_catches_an_empty_page() {
    let Some(chromium) = chromium() else {
        return;
    };
    let folder = fresh("browser-blank");
    let mut browser = Browser::start(chromium, &folder);
    for (name, body) in [("blank", ""), ("heading", "<h1>retrystorm</h1>")] {
        let page = folder.join(format!("{name}.html"));
        std::fs::write(
            &page,
            format!(
                "<!DOCTYPE html><html><head><title>{name}</title></head><body>{body}</body></html>"
            ),
        )
        .expect("a page");
        let visit = browser.visit(&page);
        assert!(visit.faults().is_empty(), "{name}: {:?}", visit.faults());
        let ink = Ink::of(&visit.screenshot);
        eprintln!("{name}: {ink:?}");
        assert!(ink.blank().is_some(), "{name} passed as not blank: {ink:?}");
    }
}

/// The static check finds what would load from elsewhere (a script, a stylesheet, an image, a
/// CSS `url(...)` or `@import`, a relative file) and lets pass what does not: an SVG namespace,
/// a fragment reference like the diagram's `url(#arrow)`, a `data:` URL and a plain link.
#[test]
fn the_static_check_finds_external_references() {
    let allowed = r##"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><path marker-end="url(#arrow)"/><use xlink:href="#arrow"/></svg><img src="data:image/png;base64,AAAA"><a href="https://example.com/docs">docs</a>"##;
    assert_eq!(external_references(allowed), Vec::<String>::new());
    for (html, expected) in [
        (
            r#"<script src="https://example.com/x.js"></script>"#,
            "src=https://example.com/x.js",
        ),
        (
            r#"<link rel="stylesheet" href="style.css">"#,
            "href=style.css",
        ),
        ("<img src=chart.png>", "src=chart.png"),
        (
            r#"<svg><image xlink:href="http://example.com/a.png"/></svg>"#,
            "href=http://example.com/a.png",
        ),
        (
            "<style>body { background: url('https://example.com/bg.png') }</style>",
            "url('https://example.com/bg.png')",
        ),
        ("<style>@import 'x.css';</style>", "@import"),
        (
            "<p data-x=\"1\">see wss://example.com/live</p>",
            "wss://example.com/live",
        ),
    ] {
        let found = external_references(html);
        assert!(
            found.iter().any(|reference| reference == expected),
            "{html}: {expected:?} not in {found:?}"
        );
    }
}
