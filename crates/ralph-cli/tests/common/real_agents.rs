//! The real agent CLIs (Claude Code, Codex, gemini-cli, opencode) for the real-agent tests:
//! where they are installed, and the environment that points each at a [`ModelServer`] with a
//! home of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Project;
use super::model_server::ModelServer;

/// A real agent run's `timeout` in RALPH.md: far beyond the seconds one takes, so a CLI that
/// hangs (waiting on a request the server never answers, say) fails its test instead of
/// holding the suite.
pub const TIMEOUT: &str = "timeout: 3m";

/// The folder holding `claude`, `codex`, `gemini` and `opencode`, installed by
/// `.ci/install-agents` (pinned versions, in a cache folder outside the repository, or in
/// `RALPH_AGENTS_DIR`) on first use: a no-op when they are already there.
pub fn agents_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/install-agents");
        let output = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
        let bin = String::from_utf8_lossy(&output.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .to_owned();
        assert!(
            output.status.success() && !bin.is_empty(),
            "the real agent CLIs are not installed and `.ci/install-agents` failed \
             (it needs `npm` and the npm registry); run it by hand to see why"
        );
        PathBuf::from(bin)
    })
}

/// One real agent run's surroundings: its own home folder and the environment pointing it at
/// the model server.
pub struct AgentEnv {
    pub home: tempfile::TempDir,
    pub vars: Vec<(String, String)>,
}

impl AgentEnv {
    fn new() -> Self {
        let home = tempfile::tempdir().expect("temp home");
        let path = format!(
            "{}:{}",
            agents_bin().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let vars = vec![
            ("HOME".into(), home.path().display().to_string()),
            ("PATH".into(), path),
            (
                "XDG_CONFIG_HOME".into(),
                home.path().join(".config").display().to_string(),
            ),
            (
                "XDG_DATA_HOME".into(),
                home.path().join(".local/share").display().to_string(),
            ),
            (
                "XDG_CACHE_HOME".into(),
                home.path().join(".cache").display().to_string(),
            ),
            (
                "XDG_STATE_HOME".into(),
                home.path().join(".local/state").display().to_string(),
            ),
            ("NO_COLOR".into(), "1".into()),
        ];
        Self { home, vars }
    }

    fn set(&mut self, name: &str, value: &str) {
        self.vars.retain(|(n, _)| n != name);
        self.vars.push((name.into(), value.into()));
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.home.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Claude Code on `server`, with an API key, no retries of its own beyond `retries`.
    pub fn claude(server: &ModelServer, retries: u32) -> Self {
        let mut env = Self::new();
        env.set("ANTHROPIC_BASE_URL", &server.url());
        env.set("ANTHROPIC_API_KEY", "sk-ant-test");
        env.set("DISABLE_AUTOUPDATER", "1");
        env.set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        env.set("CLAUDE_CODE_MAX_RETRIES", &retries.to_string());
        env.set("ANTHROPIC_MODEL", "claude-test-model");
        env
    }

    /// Codex on `server` (the Responses API), with `retries` retries of its own.
    pub fn codex(server: &ModelServer, retries: u32) -> Self {
        let mut env = Self::new();
        let codex_home = env.home.path().join(".codex");
        env.write(
            ".codex/config.toml",
            &format!(
                r#"model = "test-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "{}/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = {retries}
stream_max_retries = {retries}
stream_idle_timeout_ms = 60000
"#,
                server.url()
            ),
        );
        env.set("CODEX_HOME", &codex_home.display().to_string());
        env.set("MOCK_API_KEY", "test-key");
        env
    }

    /// gemini-cli on `server`, with an API key, trying each request `attempts` times.
    pub fn gemini(server: &ModelServer, attempts: u32) -> Self {
        let mut env = Self::new();
        env.write(
            ".gemini/settings.json",
            &format!(
                r#"{{"security": {{"auth": {{"selectedType": "gemini-api-key"}}}},
 "general": {{"disableAutoUpdate": true, "disableUpdateNag": true, "maxAttempts": {attempts}}},
 "privacy": {{"usageStatisticsEnabled": false}},
 "telemetry": {{"enabled": false}}}}"#
            ),
        );
        env.set("GOOGLE_GEMINI_BASE_URL", &server.url());
        env.set("GEMINI_API_KEY", "test-key");
        env.set("GEMINI_CLI_TRUST_WORKSPACE", "true");
        env
    }

    /// opencode on `server` (chat completions), as provider `mock` and model `mock/test-model`.
    pub fn opencode(server: &ModelServer) -> Self {
        let mut env = Self::new();
        env.write(
            ".config/opencode/opencode.json",
            &format!(
                r#"{{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "permission": {{"edit": "allow", "bash": "allow", "webfetch": "allow"}},
  "provider": {{
    "mock": {{
      "npm": "@ai-sdk/openai-compatible",
      "name": "Mock",
      "options": {{"baseURL": "{}/v1", "apiKey": "test-key"}},
      "models": {{"test-model": {{"name": "Test model",
        "cost": {{"input": 1, "output": 2, "cache_read": 0.5}}}}}}
    }}
  }}
}}"#,
                server.url()
            ),
        );
        env.set("OPENCODE_DISABLE_AUTOUPDATE", "1");
        env.set("OPENCODE_DISABLE_MODELS_FETCH", "1");
        env.set("OPENCODE_DISABLE_LSP_DOWNLOAD", "1");
        env
    }

    /// The lines of iteration `n`'s log that are JSON, parsed: the agent's own transcript.
    pub fn transcript(p: &Project, n: u64) -> Vec<serde_json::Value> {
        let ended = p.events_of("ITERATION_ENDED");
        let log = ended
            .iter()
            .find(|e| e["iteration"] == n)
            .and_then(|e| e["log_file"].as_str())
            .expect("the iteration has a log");
        std::fs::read_to_string(p.path().join(log))
            .unwrap()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// `ralph ARGS` in `p` with this environment, to the end, which must come within
    /// `limit`: a run still going then is stopped (SIGTERM, then SIGKILL) and the test fails,
    /// rather than hang. Its output is not kept (the events say what happened); the exit code
    /// is returned.
    pub fn run_within(&self, p: &Project, args: &[&str], limit: std::time::Duration) -> i32 {
        let mut child = p
            .ralph(args)
            .envs(self.vars.iter().map(|(n, v)| (n, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ralph starts");
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().expect("ralph's status") {
                return status.code().unwrap_or(-1);
            }
            if std::time::Instant::now() > deadline {
                // SAFETY: kill(2) only sends a signal (to a child not yet reaped).
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                std::thread::sleep(std::time::Duration::from_secs(5));
                let _ = child.kill();
                let _ = child.wait();
                panic!("ralph still ran after {limit:?}; events: {:#?}", p.events());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// `ralph ARGS` in `p` with this environment, to the end.
    pub fn run(&self, p: &Project, args: &[&str]) -> Output {
        p.ralph(args)
            .envs(self.vars.iter().map(|(n, v)| (n, v)))
            .stdin(Stdio::null())
            .output()
            .expect("ralph runs")
    }
}

/// `at` as the events write a time.
pub fn event_time(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap();
    let seconds = i64::try_from(since.as_secs()).unwrap();
    let ts = jiff_like_utc(seconds);
    format!("{ts}.000Z")
}

/// `YYYY-MM-DDTHH:MM:SS` in UTC for Unix `seconds` (civil-from-days, Howard Hinnant's).
fn jiff_like_utc(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}
