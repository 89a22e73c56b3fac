//! The reference's examples of a sweep sharded over many machines ("Beyond one machine"): the
//! Kubernetes Indexed Job parses as YAML and runs each shard exactly once, the Slurm job array
//! has one task per shard, and both run the same sweep. (`ci/slurm-sweep.sh` runs the Slurm
//! example for real on a single-node Slurm; Kubernetes stays documentation, checked here.)

use serde_norway::Value;

/// The reference's "### Beyond one machine" section, up to the next heading.
fn section() -> String {
    let reference =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference.md")).unwrap();
    let (_, rest) = reference
        .split_once("\n### Beyond one machine\n")
        .expect("docs/reference.md has a section \"### Beyond one machine\"");
    let end = ["\n## ", "\n### "]
        .iter()
        .filter_map(|heading| rest.find(heading))
        .min()
        .unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// The text of the section's first block fenced as ```lang, and what follows it.
fn block<'a>(section: &'a str, lang: &str) -> (&'a str, &'a str) {
    section
        .split_once(&format!("\n```{lang}\n"))
        .and_then(|(_, rest)| rest.split_once("\n```\n"))
        .unwrap_or_else(|| panic!("\"Beyond one machine\" has no ```{lang} block"))
}

/// The number in `--shard "<index>/N"` of a command line, N.
fn shard_count(command: &str, index: &str) -> u64 {
    let marker = format!("--shard \"{index}/");
    let (_, rest) = command
        .split_once(&marker)
        .unwrap_or_else(|| panic!("no {marker}…\" in {command}"));
    let (count, _) = rest.split_once('"').unwrap();
    count
        .parse()
        .unwrap_or_else(|_| panic!("{marker}{count}\": not a count"))
}

/// The value of the option `name` in a command line.
fn option<'a>(command: &'a str, name: &str) -> &'a str {
    let words: Vec<&str> = command.split_whitespace().collect();
    let at = words
        .iter()
        .position(|word| *word == name)
        .unwrap_or_else(|| panic!("no {name} in {command}"));
    words[at + 1]
}

/// A shell command line as one line of words: continuation lines joined, spaces collapsed.
fn one_line(command: &str) -> String {
    command
        .replace("\\\n", " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The reference's Kubernetes Job is YAML that Kubernetes would run as the sweep's shards: an
/// Indexed Job (so `JOB_COMPLETION_INDEX` is set, 0 to completions - 1) with as many
/// completions, all running at once, as the `--shard "$JOB_COMPLETION_INDEX/N"` of its command
/// has shards; pods not restarted in place (`restartPolicy: Never`, which an Indexed Job
/// retries as a new pod with the same index); the command run by `sh -c`, so the variable is
/// expanded; `--out` on the mounted volume, so that the shards outlive their pods; and the
/// merge line after it taking exactly those N shards from that volume. Kubernetes is not run
/// here, so this is what keeps the example from drifting.
#[test]
fn the_references_kubernetes_job_runs_each_shard_once() {
    let section = section();
    let (yaml, after) = block(&section, "yaml");
    let job: Value = serde_norway::from_str(yaml).expect("the reference's Job is YAML");
    assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"));
    assert_eq!(job["kind"].as_str(), Some("Job"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
    let containers = pod["containers"].as_sequence().expect("containers");
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
    let command: Vec<&str> = container["command"]
        .as_sequence()
        .expect("command")
        .iter()
        .map(|word| word.as_str().unwrap())
        .collect();
    assert_eq!(command, ["sh", "-c"]);
    let args = container["args"].as_sequence().expect("args");
    assert_eq!(args.len(), 1);
    let sweep = args[0].as_str().unwrap();
    assert!(sweep.starts_with("retrystorm sweep "), "{sweep}");
    assert!(
        !sweep.contains('\n'),
        "the folded args are one line: {sweep:?}"
    );

    let shards = shard_count(sweep, "$JOB_COMPLETION_INDEX");
    assert!(sweep.contains(&format!("--shard \"$JOB_COMPLETION_INDEX/{shards}\"")));
    assert_eq!(spec["completions"].as_u64(), Some(shards));
    assert_eq!(spec["parallelism"].as_u64(), Some(shards));

    let out = option(sweep, "--out");
    let mounts = container["volumeMounts"]
        .as_sequence()
        .expect("volumeMounts");
    let mount = mounts
        .iter()
        .find(|mount| mount["mountPath"].as_str() == Some(out))
        .unwrap_or_else(|| panic!("no volume mounted at --out {out}"));
    let volume = mount["name"].as_str().unwrap();
    let volumes = pod["volumes"].as_sequence().expect("volumes");
    let claim = volumes
        .iter()
        .find(|v| v["name"].as_str() == Some(volume))
        .unwrap_or_else(|| panic!("no volume named {volume}"));
    assert!(
        claim["persistentVolumeClaim"]["claimName"]
            .as_str()
            .is_some(),
        "the results volume outlives the pods: a persistentVolumeClaim"
    );

    let merge = after
        .split_once('`')
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(merge, _)| merge)
        .expect("a merge line after the Job");
    assert_eq!(
        merge,
        format!("retrystorm merge {out}/tuning-shards/shard-*-of-{shards} --out {out}")
    );
}

/// The reference's Slurm job script has one array task per shard: `#SBATCH --array=0-M` gives
/// indexes 0 to M, which must be exactly the K of `--shard "${SLURM_ARRAY_TASK_ID}/N"` (N =
/// M + 1), or shards would be missing or repeated; its merge line takes those N shards from
/// its `--out`. `ci/slurm-sweep.sh` submits this very script to a real Slurm.
#[test]
fn the_references_slurm_array_has_one_task_per_shard() {
    let section = section();
    let (script, _) = block(&section, "sh");
    assert!(script.starts_with("#!/bin/bash\n"), "{script}");
    let last: u64 = script
        .lines()
        .find_map(|line| line.strip_prefix("#SBATCH --array=0-"))
        .expect("#SBATCH --array=0-M")
        .parse()
        .expect("#SBATCH --array=0-M with M a number");
    let sweep = one_line(
        script
            .split_once("retrystorm sweep ")
            .map(|(_, rest)| rest.split_once("\n#").map_or(rest, |(sweep, _)| sweep))
            .expect("a retrystorm sweep command"),
    );
    let shards = shard_count(&sweep, "${SLURM_ARRAY_TASK_ID}");
    assert_eq!(shards, last + 1, "--array=0-{last} against /{shards}");
    let out = option(&sweep, "--out");
    let merge = script
        .lines()
        .find_map(|line| line.strip_prefix("# then, once: "))
        .expect("a '# then, once: retrystorm merge' line");
    assert_eq!(
        merge,
        format!("retrystorm merge {out}/tuning-shards/shard-*-of-{shards} --out {out}")
    );
}

/// Both examples run the same sweep: their command lines are the same words but for the shard
/// index variable and the output folder, as every shard of one sweep must be. So the sweep that
/// `ci/slurm-sweep.sh` runs on Slurm is the one the Kubernetes example runs too.
#[test]
fn the_references_slurm_and_kubernetes_examples_run_the_same_sweep() {
    let section = section();
    let (script, _) = block(&section, "sh");
    let (yaml, _) = block(&section, "yaml");
    let job: Value = serde_norway::from_str(yaml).unwrap();
    let kubernetes = job["spec"]["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let slurm = one_line(
        &script[script.find("retrystorm sweep ").unwrap()..]
            .lines()
            .take_while(|line| !line.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let general = |command: &str, index: &str| {
        let out = option(command, "--out");
        command
            .replace(index, "K")
            .replace(&format!("--out {out}"), "--out OUT")
    };
    assert_eq!(
        general(&slurm, "${SLURM_ARRAY_TASK_ID}"),
        general(&kubernetes, "$JOB_COMPLETION_INDEX")
    );
}
