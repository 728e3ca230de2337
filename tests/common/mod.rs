//! Shared by the terminal tests (tests/tui_e2e.rs, tests/tui_live.rs): a tmux server of our own to run the
//! real binary in, read its screen and check that the terminal comes back.
#![allow(dead_code)]
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_rocescope");
pub const PROMPT: &str = "e2e$ ";

/// A tmux server of our own (its own socket), killed when dropped.
pub struct Tmux {
    pub socket: String,
}

impl Tmux {
    pub fn start(name: &str) -> Tmux {
        Tmux::start_sized(name, 120, 40)
    }

    /// A terminal of `width` × `height`.
    pub fn start_sized(name: &str, width: u16, height: u16) -> Tmux {
        let ok = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "tmux is missing: install it (scripts/test does: apt-get install tmux)"
        );
        let t = Tmux {
            socket: format!("rocescope-{name}-{}", std::process::id()),
        };
        let root = env!("CARGO_MANIFEST_DIR");
        t.run(&[
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "-c",
            root,
            &format!(
                "env -i PATH=/usr/bin:/bin HOME=/tmp TERM=xterm-256color PS1='{PROMPT}' \
                 bash --norc --noprofile"
            ),
        ]);
        t.wait_for(PROMPT.trim_end());
        t
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    pub fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-t", "0", "-l", line]);
        self.keys(&["Enter"]);
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "0"])
    }

    pub fn alternate_on(&self) -> bool {
        self.run(&["display", "-p", "-t", "0", "#{alternate_on}"])
            .trim()
            == "1"
    }

    pub fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "waited for {text:?}; screen:\n{s}"
            );
            sleep(Duration::from_millis(100));
        }
    }

    /// Waits (20 s at most) for a screen showing every one of `texts`: a screen caught while the terminal
    /// is still drawing may show the first and not yet the others.
    pub fn wait_for_all(&self, texts: &[&str]) -> String {
        self.wait_until(Duration::from_secs(20), |s| {
            texts.iter().all(|t| s.contains(t))
        })
        .unwrap_or_else(|s| panic!("waited for all of {texts:?}; screen:\n{s}"))
    }

    /// Waits at most `limit` for a screen that `ok` accepts; returns it, or None with the last screen.
    pub fn wait_until(&self, limit: Duration, ok: impl Fn(&str) -> bool) -> Result<String, String> {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return Ok(s);
            }
            if start.elapsed() > limit {
                return Err(s);
            }
            sleep(Duration::from_millis(50));
        }
    }

    /// The shell is back: prompt after our marker line, cooked mode (icanon, echo), main screen.
    pub fn assert_restored(&self, marker: &str) {
        self.type_line(&format!("stty -a | tr ' ' '\\n' | grep -x -e -icanon -e icanon -e echo -e -echo | tr '\\n' ' '; echo; echo {marker}"));
        let s = self.wait_for(&format!("\n{marker}"));
        assert!(!self.alternate_on(), "alternate screen still on:\n{s}");
        let line = s
            .lines()
            .rev()
            .find(|l| l.contains("icanon"))
            .unwrap_or_else(|| panic!("no stty output:\n{s}"));
        assert!(
            line.split_whitespace().any(|w| w == "icanon")
                && line.split_whitespace().any(|w| w == "echo"),
            "terminal left in raw mode: {line}\n{s}"
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Pids of the processes named `name` whose parent is `parent`.
pub fn children_named(parent: &str, name: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // pid (comm) state ppid ...
            let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let ppid = rest.split_whitespace().nth(1)?;
            (comm == name && ppid == parent).then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect()
}
