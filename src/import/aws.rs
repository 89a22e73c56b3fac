//! An AWS SDK's retry settings from the shared config file (`~/.aws/config`): one profile's
//! `retry_mode` and `max_attempts` (AWS SDKs and Tools Reference Guide, "Retry behavior").
//!
//! | config | policy |
//! |---|---|
//! | `retry_mode = standard` | `max_attempts = max_attempts - 1` (3 attempts unless written); `base = "1s"`, `cap = "20s"`, `multiplier = 2`, `jitter = "full"`: `U(0, 1) x min(2^(n-1), 20) s` (botocore `standard.py`, Go v2); an `aws-retry-quota` control (500 tokens, 5 a retry, 10 after a timeout, 1 back per success without retry) |
//! | `retry_mode = adaptive` | the same, and an `aws-adaptive` control (a CUBIC send-rate bucket, after the first 429) |
//! | `retry_mode = legacy` | botocore's legacy mode (the AWS CLI, boto3): 5 attempts unless written, `U(0, 1) x 2^(n-1)` s uncapped (`_retry.json`: base `rand`, growth factor 2), no quota. Legacy is each SDK's own; the notes say so |
//! | no `retry_mode` | refused: the default depends on the SDK (botocore: legacy; Go v2, JS v3: standard) |
//!
//! Retried (`GO-STD`, botocore's standard mode): 500, 502, 503, 504, a throttling response
//! (429 here) and every failure without a response. The SDKs set no call deadline and no
//! attempt timeout of their own here: `attempt_timeout = "none"`, the deadline the scenario's.
//!
//! The SDKs retry every operation that fails so, whatever its method (`unsafe_retries = true`).
//! Several APIs carry an idempotency token (`ClientToken`, `ClientRequestToken`) that the SDK
//! fills in when the caller does not, which makes their retries safe; which operations have one
//! is the API's, not the config's, so the notes ask for `idempotency_key = true` where it does.
//!
//! The file is INI as the SDKs read it: `[default]` and `[profile NAME]` sections of
//! `key = value` lines, `#` and `;` comments, indented lines continuing a key's sub-settings
//! (a service's, ignored here). Other settings (region, credentials, ...) are not read and
//! never echoed. `import_profile` (`--profile`) names the profile, `default` unless written.

use super::{ImportError, Imported, field_error};
use crate::base::time::Duration;
use crate::control::ControlKind;
use crate::retry::backoff::Jitter;
use crate::retry::retry_after::RetryAfterMode;
use crate::scenario::{AttemptTimeout, ControlSpec, TransportError};

/// Standard and adaptive modes' default `max_attempts`.
pub const STANDARD_MAX_ATTEMPTS: u64 = 3;
/// botocore's legacy mode's default `max_attempts`.
pub const LEGACY_MAX_ATTEMPTS: u64 = 5;
/// Standard mode's backoff: base 1 s, doubling, capped at 20 s (`MAX_BACKOFF`).
pub const STANDARD_BASE: Duration = Duration::from_ms(1000);
pub const STANDARD_CAP: Duration = Duration::from_ms(20_000);
/// The statuses every mode retries: throttling (429) and 500, 502, 503, 504.
pub const RETRYABLE_STATUSES: [u16; 5] = [429, 500, 502, 503, 504];

/// Whether `text` reads as an INI file: its first line that is not blank or a comment opens a
/// `[section]` (a name without commas, quotes or brackets). A JSON config is an object and
/// starts with `{`; a JSON list such as `[1, 2]` is no section.
pub fn is_ini(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with(';'))
        .and_then(|line| line.strip_prefix('[')?.strip_suffix(']'))
        .is_some_and(|name| !name.contains([',', '"', '[', ']', '{', '}']))
}

/// One profile's settings read, each with its line.
#[derive(Default)]
struct Profile {
    retry_mode: Option<(String, usize)>,
    max_attempts: Option<(String, usize)>,
}

/// Imports the profile `profile` (`default` unless given) of the INI file `text`.
pub fn import(text: &str, profile: Option<&str>) -> Result<Imported, ImportError> {
    let wanted = profile.unwrap_or("default");
    let mut sections: Vec<String> = Vec::new();
    let mut chosen: Option<Profile> = None;
    let mut current: Option<String> = None;
    // Whether a section (a profile, or another such as `[sso-session NAME]`) has opened.
    let mut in_section = false;
    let line_error = |line: usize, message: String| field_error(format!("line {line}"), message);
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let indented = raw.starts_with([' ', '\t']);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let name = header
                .strip_suffix(']')
                .ok_or_else(|| line_error(number, "a section header ends with `]`".into()))?;
            let name = name.trim();
            let profile = if name == "default" {
                Some("default".to_string())
            } else {
                name.strip_prefix("profile ").map(|p| p.trim().to_string())
            };
            if let Some(profile) = &profile {
                if sections.contains(profile) {
                    return Err(line_error(
                        number,
                        format!(
                            "profile {:?} is written twice (SDKs differ on which wins)",
                            crate::base::escape::user_text(profile)
                        ),
                    ));
                }
                sections.push(profile.clone());
                if profile == wanted {
                    chosen = Some(Profile::default());
                }
            }
            current = profile;
            in_section = true;
            continue;
        }
        if indented {
            // A sub-setting of the key above (`s3 =` then `  max_concurrent_requests = 10`).
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(line_error(
                number,
                "neither a [section], a `key = value` line nor a comment".into(),
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        if !in_section {
            return Err(line_error(number, "a setting before any [section]".into()));
        }
        if current.as_deref() != Some(wanted) {
            continue;
        }
        let Some(profile) = chosen.as_mut() else {
            continue;
        };
        let slot = match key {
            "retry_mode" => &mut profile.retry_mode,
            "max_attempts" => &mut profile.max_attempts,
            _ => continue,
        };
        if slot.is_some() {
            return Err(line_error(
                number,
                format!("{key} is written twice in this profile"),
            ));
        }
        *slot = Some((value.to_string(), number));
    }
    let Some(profile) = chosen else {
        let listed: Vec<String> = sections
            .iter()
            .map(|s| format!("{:?}", crate::base::escape::user_text(s)))
            .collect();
        return Err(field_error(
            "",
            format!(
                "no profile {:?}; the profiles are {} (choose one with import_profile, or --profile)",
                crate::base::escape::user_text(wanted),
                if listed.is_empty() {
                    "(none)".into()
                } else {
                    listed.join(", ")
                }
            ),
        ));
    };
    let label = if wanted == "default" {
        "[default]".to_string()
    } else {
        format!("[profile {}]", crate::base::escape::user_text(wanted))
    };
    let Some((mode, mode_line)) = profile.retry_mode else {
        return Err(field_error(
            format!("{label} retry_mode"),
            "not written: the default is each SDK's own (botocore and the AWS CLI: legacy; Go v2, JS v3: standard); write retry_mode = standard, adaptive or legacy",
        ));
    };
    let legacy = match mode.as_str() {
        "standard" | "adaptive" => false,
        "legacy" => true,
        other => {
            return Err(field_error(
                format!("line {mode_line}"),
                format!(
                    "retry_mode {:?} is not legacy, standard or adaptive",
                    crate::base::escape::user_text(other)
                ),
            ));
        }
    };
    let attempts = match profile.max_attempts {
        None => {
            if legacy {
                LEGACY_MAX_ATTEMPTS
            } else {
                STANDARD_MAX_ATTEMPTS
            }
        }
        Some((value, line)) => value
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=101).contains(n))
            .ok_or_else(|| {
                field_error(
                    format!("line {line}"),
                    format!(
                        "max_attempts {:?} is not an integer from 1 to 101 (attempts, the first included)",
                        crate::base::escape::user_text(&value)
                    ),
                )
            })?,
    };
    let mut imported = Imported {
        source: format!("AWS shared config, {label}, retry_mode {mode}"),
        max_attempts: Some(attempts - 1),
        base: Some(STANDARD_BASE),
        multiplier: Some(2.0),
        jitter: Some(Jitter::Full),
        retryable_statuses: Some(RETRYABLE_STATUSES.to_vec()),
        retryable_transport_errors: Some(TransportError::ALL.to_vec()),
        attempt_timeout: Some(AttemptTimeout::None),
        retry_after: Some(RetryAfterMode::Ignore),
        ..Imported::default()
    };
    imported.notes.push(format!(
        "max_attempts {attempts}{}: {} retries",
        if legacy && attempts == LEGACY_MAX_ATTEMPTS {
            " (botocore's legacy default)"
        } else if attempts == STANDARD_MAX_ATTEMPTS && !legacy {
            " (the default)"
        } else {
            ""
        },
        attempts - 1
    ));
    imported.notes.push("retried: throttling (429), 500, 502, 503, 504 and every failure without a response (timeouts, resets, refused connections)".into());
    super::retries_any_method(
        &mut imported,
        "the SDK retries every operation that fails with a retryable error, whatever it writes; operations whose API has an idempotency token (ClientToken, ClientRequestToken) get one filled in by the SDK, which a config does not say: write idempotency_key = true in the policy (or on those operations) where the API has one",
    );
    imported.notes.push("Retry-After is not read (the classic modes; x-amz-retry-after comes with AWS_NEW_RETRIES_2026): retry_after = \"ignore\"".into());
    imported.notes.push("the SDK sets no deadline or attempt timeout here: attempt_timeout = \"none\", the call's deadline is the scenario's".into());
    if legacy {
        // rand * 2^(n-1) s without a cap: the cap is the last retry's backoff.
        let cap = Duration(STANDARD_BASE.micros() << attempts.saturating_sub(2).min(20));
        imported.cap = Some(cap);
        imported.notes.push(format!(
            "retry_mode legacy is each SDK's own: these are botocore's (the AWS CLI, boto3): U(0, 1) x 2^(n-1) s, uncapped (cap = {cap}, the last retry's), no retry quota. Other SDKs' legacy modes differ: write their settings in the policy"
        ));
        return Ok(imported);
    }
    imported.cap = Some(STANDARD_CAP);
    imported.notes.push("backoff U(0, 1) x min(2^(n-1), 20) s (botocore; Go v2 draws from 0 to 2^n): the classic standard mode, before AWS_NEW_RETRIES_2026".into());
    imported
        .controls
        .push(ControlSpec::empty(ControlKind::AwsRetryQuota));
    imported.notes.push("retry quota per client: 500 tokens, a retry costs 5 (10 after a timeout), a success without retry gives 1 back (an aws-retry-quota control per process)".into());
    if mode == "adaptive" {
        imported
            .controls
            .push(ControlSpec::empty(ControlKind::AwsAdaptive));
        imported.notes.push("adaptive: after the first throttling response (429) every attempt, first ones included, waits for a token of a send-rate bucket CUBIC tunes (an aws-adaptive control per process)".into());
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An INI file is told from JSON by its first line that is not blank or a comment.
    #[test]
    fn ini_is_told_by_its_first_section() {
        assert!(is_ini(
            "# team config\n\n[default]\nretry_mode = standard\n"
        ));
        assert!(is_ini("; c\n[profile x]\n"));
        assert!(!is_ini("{\"retry_policy\": {}}"));
        assert!(!is_ini("[1, 2]\n"));
        assert!(!is_ini(""));
    }

    /// Sections other than profiles (`[sso-session NAME]`, `[services NAME]`) are skipped with
    /// their settings; a setting before any section is refused with its line.
    #[test]
    fn other_sections_are_skipped() {
        let text = "[sso-session corp]\nsso_region = x\n[default]\nretry_mode = standard\n";
        assert_eq!(import(text, None).unwrap().max_attempts, Some(2));
        let error = import("retry_mode = standard\n[default]\n", None).unwrap_err();
        assert_eq!(error.field, "line 1");
    }
}
