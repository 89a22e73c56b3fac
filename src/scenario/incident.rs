//! The incident: the trigger a run recovers from, from which `recovery_s` is measured and
//! around which the peaks, goodput and failures are split.
//!
//! A scenario may say what it is in `[incident]`: a time range (`start`, and `end` if it ends
//! within the run), or the curve whose changes are the incident (`from = "clients.load"` for a
//! load spike, `from = "service.db.capacity"` for one service's outage). Without it the
//! incident is inferred from the services' capacity curves alone: from the first time one
//! leaves its starting level to the last time one is back. Those are the only time-bounded
//! triggers a scenario schedules; a crash under overload is a consequence of the load, and
//! injected `errors` are a steady rate, so neither is a trigger. The clients' `load` curve is
//! never inferred as the incident: its shape is the workload (a diurnal ramp, a day's rise and
//! fall), and counting it would make the whole run the incident and hide the outage inside it.
//! A load spike is the incident only when the scenario says so.
//!
//! An incident that starts at or after `duration` lies outside the run: nothing in it could
//! show the incident or the recovery, so it is an error at the line that puts it there. One
//! that has not ended by the end of arrivals has no recovery to measure: `recovery_s` is then
//! `never`. After reading, the incident is written out as `start` and `end` (`end` left out
//! when it does not end), so the `scenario.toml` a run writes says which window it used.

use toml::Spanned;

use super::{CapacityPoint, IncidentSpec, Problem, Scenario, span_of};
use crate::base::capacity::CapacityCurve;
use crate::base::suggest::did_you_mean;
use crate::base::time::{Duration, Micros};

/// The key that names the clients' load curve in `[incident] from`.
const LOAD: &str = "clients.load";

/// When the incident starts, and when it ends (`None`: not by the end of arrivals).
pub type Window = (Micros, Option<Micros>);

/// The incident of a read scenario: its resolved `[incident]` (see [`resolve_incident`]), or
/// none.
pub fn window(scenario: &Scenario) -> Option<Window> {
    let spec = scenario.incident.as_ref()?.get_ref();
    let start = spec.start.as_ref()?.get_ref().micros();
    Some((start, spec.end.as_ref().map(|end| end.get_ref().micros())))
}

/// Each curve that may be the incident: its key for `from`, and its points.
fn curves(scenario: &Scenario) -> Vec<(String, &[CapacityPoint])> {
    let mut curves = vec![(LOAD.to_string(), scenario.clients.load.as_slice())];
    curves.extend(scenario.services().into_iter().map(|service| {
        let key = match &scenario.upstream {
            Some(_) => "upstream.capacity".to_string(),
            None => format!("service.{}.capacity", service.name()),
        };
        (key, service.capacity.as_slice())
    }));
    curves
}

/// The incident `curves` make together (the first start to the last end), checking that each
/// of their incidents starts within the run; `None` if none leaves its starting level.
fn curves_window(
    curves: &[&[CapacityPoint]],
    duration: Duration,
) -> Result<Option<Window>, Problem> {
    let mut window: Option<Window> = None;
    for points in curves {
        let incidents = CapacityCurve::new(1, points).incidents();
        for &(start, _) in &incidents {
            if start >= duration.micros() {
                let point = points
                    .iter()
                    .find(|point| point.at.get_ref().micros() == start)
                    .expect("an incident starts at a point");
                return Err((point.at.span(), outside(start, duration)));
            }
        }
        let (Some(&(start, _)), Some(&(_, end))) = (incidents.first(), incidents.last()) else {
            continue;
        };
        window = Some(match window {
            None => (start, end),
            Some((earlier, later)) => (earlier.min(start), later.zip(end).map(|(a, b)| a.max(b))),
        });
    }
    Ok(window)
}

/// The error of an incident that starts at `start`, at or after the end of arrivals.
fn outside(start: Micros, duration: Duration) -> String {
    format!(
        "the incident starts at {}, at or after the end of arrivals (duration = \"{duration}\"): nothing in the run could show it or the recovery from it; move it inside the run or make the run longer",
        Duration(start)
    )
}

/// The scenario's incident, checked: the declared one, or the one its capacity curves make.
pub(super) fn validate_incident(scenario: &Scenario) -> Result<Option<Window>, Problem> {
    let duration = *scenario.duration.get_ref();
    let Some(declared) = &scenario.incident else {
        let capacity: Vec<&[CapacityPoint]> = curves(scenario)
            .into_iter()
            .skip(1)
            .map(|(_, points)| points)
            .collect();
        return curves_window(&capacity, duration);
    };
    let spec = declared.get_ref();
    let table = declared.span();
    match (&spec.from, &spec.start) {
        (Some(from), None) if spec.end.is_none() => from_curve(scenario, from, duration).map(Some),
        (None, Some(start)) => {
            let span = span_of(start, table);
            let start = start.get_ref().micros();
            if start >= duration.micros() {
                return Err((span, outside(start, duration)));
            }
            match &spec.end {
                Some(end) if end.get_ref().micros() <= start => Err((
                    span_of(end, span),
                    format!(
                        "the incident ends at {}, not after its start ({}); `end` must come after `start`, or be left out for an incident that lasts past the end of the run",
                        end.get_ref(),
                        Duration(start)
                    ),
                )),
                end => Ok(Some((
                    start,
                    end.as_ref().map(|end| end.get_ref().micros()),
                ))),
            }
        }
        _ => Err((
            table,
            format!(
                "[incident] takes either `from` (the curve that is the incident: {}) or `start` with an optional `end`, not both",
                curve_keys(scenario)
            ),
        )),
    }
}

/// The keys `from` accepts, for errors.
fn curve_keys(scenario: &Scenario) -> String {
    curves(scenario)
        .into_iter()
        .map(|(key, _)| key)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The incident of the curve `from` names.
fn from_curve(
    scenario: &Scenario,
    from: &Spanned<String>,
    duration: Duration,
) -> Result<Window, Problem> {
    let curves = curves(scenario);
    let name = from.get_ref();
    let Some((_, points)) = curves.iter().find(|(key, _)| key == name) else {
        let hint = did_you_mean(name, curves.iter().map(|(key, _)| key.as_str()))
            .map(|near| format!(" (did you mean {near:?}?)"))
            .unwrap_or_default();
        return Err((
            from.span(),
            format!(
                "[incident] from = {name:?} names no curve of the scenario{hint}; valid: {}",
                curve_keys(scenario)
            ),
        ));
    };
    curves_window(&[points], duration)?.ok_or_else(|| {
        (
            from.span(),
            format!(
                "{name} never leaves its starting level, so it makes no incident; give it points that change, or declare `start` and `end`"
            ),
        )
    })
}

/// Writes the incident out as `start` and `end`, keeping where a declared one was written.
/// Call after [`validate_incident`] accepted the scenario.
pub(super) fn resolve_incident(scenario: &mut Scenario) {
    let window = validate_incident(scenario).expect("validated before it is resolved");
    let span = scenario
        .incident
        .as_ref()
        .map_or(0..0, |declared| declared.span());
    scenario.incident = window.map(|(start, end)| {
        Spanned::new(
            span,
            IncidentSpec {
                from: None,
                start: Some(Spanned::new(0..0, Duration(start))),
                end: end.map(|end| Spanned::new(0..0, Duration(end))),
            },
        )
    });
}
