//! `rocescope extcap`: Wireshark's external capture interface (Wireshark's doc/extcap.adoc), so that Wireshark
//! and tshark list rocescope among their interfaces (`rocescope-IFACE`), start its live capture and read the
//! frames from the FIFO they name, while rocescope analyses them: its report goes to the file chosen in the
//! capture dialog, its metrics to Prometheus. `--install` writes the entry Wireshark runs into its personal
//! extcap folders.
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::fail;

/// The prefix of rocescope's interfaces in Wireshark's list: `rocescope-eth0` captures on eth0.
pub const PREFIX: &str = "rocescope-";

/// The file name of the entry in an extcap folder.
const ENTRY: &str = "rocescope";

/// What Wireshark asked for.
#[derive(Debug, Clone)]
pub enum Call {
    /// `--extcap-interfaces`: the interfaces.
    Interfaces,
    /// `--extcap-dlts`: the link type of an interface.
    Dlts { interface: String },
    /// `--extcap-config`: the options of the capture dialog.
    Options,
    /// `--extcap-capture-filter F` without `--capture`: whether libpcap compiles F for the interface.
    CheckFilter { interface: String, filter: String },
    /// `--capture --fifo PATH`: the capture session, writing the FIFO.
    Capture(Box<super::capture::Config>),
    /// `--install`: the entry into these folders, running this binary.
    Install { folders: Vec<PathBuf>, exe: PathBuf },
}

/// The kind of value an option of the capture dialog takes (extcap's `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Unsigned,
    Text,
    /// A file to write: Wireshark offers a file chooser.
    NewFile,
}

/// An option of Wireshark's capture dialog (an `arg` line), made from the flag that takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialogOption {
    /// The flag, as Wireshark passes it: `--report`.
    pub call: String,
    pub display: String,
    pub tooltip: String,
    pub kind: Kind,
    pub default: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub call: Call,
    pub options: Vec<DialogOption>,
}

/// The interface rocescope's extcap name stands for (`rocescope-eth0`: eth0), or what to give instead.
pub fn interface_of(extcap_name: &str) -> Result<&str, String> {
    match extcap_name.strip_prefix(PREFIX) {
        Some(iface) if !iface.is_empty() => Ok(iface),
        _ => Err(format!(
            "'{extcap_name}' is not one of rocescope's interfaces: give {PREFIX}IFACE (rocescope extcap --extcap-interfaces lists them)"
        )),
    }
}

/// A value inside extcap's braces: braces and line ends would end it early.
fn braced(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '{' => '(',
            '}' => ')',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

/// `--extcap-interfaces`' answer: the extcap's line, then one interface per capture device.
pub fn interfaces_text(devices: &[String]) -> String {
    let mut out = format!(
        "extcap {{version={}}}{{display=rocescope: RoCEv2 with its analysis}}\n",
        env!("CARGO_PKG_VERSION")
    );
    for d in devices {
        out += &format!(
            "interface {{value={PREFIX}{}}}{{display=RoCEv2 on {}, analysed by rocescope}}\n",
            braced(d),
            braced(d)
        );
    }
    out
}

/// `--extcap-dlts`' answer: the link type the capture writes (`any`: Linux cooked capture v2, as the session
/// chooses it).
pub fn dlts_text(interface: &str) -> String {
    if interface == "any" {
        "dlt {number=276}{name=LINUX_SLL2}{display=Linux cooked capture v2}\n".to_string()
    } else {
        "dlt {number=1}{name=EN10MB}{display=Ethernet}\n".to_string()
    }
}

/// `--extcap-config`'s answer: an `arg` line per option of the capture dialog.
pub fn options_text(options: &[DialogOption]) -> String {
    let mut out = String::new();
    for (n, o) in options.iter().enumerate() {
        out += &format!(
            "arg {{number={n}}}{{call={}}}{{display={}}}{{tooltip={}}}",
            o.call,
            braced(&o.display),
            braced(&o.tooltip)
        );
        out += match o.kind {
            Kind::Unsigned => "{type=unsigned}",
            Kind::Text => "{type=string}",
            Kind::NewFile => "{type=fileselect}{mustexist=false}",
        };
        if let Some(d) = &o.default {
            out += &format!("{{default={}}}", braced(d));
        }
        out += "\n";
    }
    out
}

/// The entry Wireshark runs: a shell script that hands its arguments to `rocescope extcap`.
pub fn entry_script(exe: &Path) -> String {
    let quoted = exe.display().to_string().replace('\'', r"'\''");
    format!(
        "#!/bin/sh\n# Wireshark's extcap entry for rocescope (written by `rocescope extcap --install`).\nexec '{quoted}' extcap \"$@\"\n"
    )
}

/// Wireshark's personal extcap folders: 4.0 and before look in the configuration folder, 4.1 and later in
/// `~/.local/lib/wireshark/extcap`.
pub fn personal_folders(env: impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let home = env("HOME").map(PathBuf::from);
    let config = match (env("WIRESHARK_CONFIG_DIR"), env("XDG_CONFIG_HOME"), &home) {
        (Some(dir), _, _) => Some(PathBuf::from(dir)),
        (None, Some(xdg), _) => Some(Path::new(&xdg).join("wireshark")),
        (None, None, Some(h)) => Some(h.join(".config/wireshark")),
        _ => None,
    };
    let mut folders: Vec<PathBuf> = config.into_iter().map(|c| c.join("extcap")).collect();
    folders.extend(home.map(|h| h.join(".local/lib/wireshark/extcap")));
    folders
}

fn install(folders: &[PathBuf], exe: &Path) -> anyhow::Result<()> {
    if folders.is_empty() {
        anyhow::bail!("no folder to install into: HOME is not set (give --install-dir DIR)");
    }
    let script = entry_script(exe);
    for dir in folders {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(ENTRY);
        fs::write(&path, &script).with_context(|| format!("cannot write {}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
                .with_context(|| format!("cannot make {} executable", path.display()))?;
        }
        println!("rocescope: wrote {}", path.display());
    }
    Ok(())
}

pub fn run(cfg: Config) -> ExitCode {
    let text = match cfg.call {
        Call::Interfaces => interfaces_text(&rocescope::source::live::interfaces()),
        Call::Dlts { interface } => dlts_text(&interface),
        Call::Options => options_text(&cfg.options),
        Call::CheckFilter { interface, filter } => {
            let linktype = if interface == "any" { 276 } else { 1 };
            // Wireshark shows what an invalid filter's check prints, and takes silence for valid.
            return match rocescope::source::live::check_filter(&filter, linktype) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    println!("{e}");
                    ExitCode::FAILURE
                }
            };
        }
        Call::Capture(capture) => return super::capture::run(&capture),
        Call::Install { folders, exe } => {
            return match install(&folders, &exe) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            };
        }
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(anyhow::Error::new(e).context("cannot answer Wireshark")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_are_extcap_lines() {
        let lines = interfaces_text(&["eth0".into(), "a{b}".into()]);
        let mut it = lines.lines();
        assert!(it.next().unwrap().starts_with("extcap {version="));
        assert_eq!(
            it.next(),
            Some("interface {value=rocescope-eth0}{display=RoCEv2 on eth0, analysed by rocescope}")
        );
        assert_eq!(
            it.next(),
            Some("interface {value=rocescope-a(b)}{display=RoCEv2 on a(b), analysed by rocescope}")
        );
        assert_eq!(it.next(), None);
        assert_eq!(
            dlts_text("eth0"),
            "dlt {number=1}{name=EN10MB}{display=Ethernet}\n"
        );
        let options = [
            DialogOption {
                call: "--port".into(),
                display: "UDP port".into(),
                tooltip: "The port {of} RoCEv2".into(),
                kind: Kind::Unsigned,
                default: Some("4791".into()),
            },
            DialogOption {
                call: "--report".into(),
                display: "Report".into(),
                tooltip: "Where".into(),
                kind: Kind::NewFile,
                default: None,
            },
        ];
        assert_eq!(
            options_text(&options),
            "arg {number=0}{call=--port}{display=UDP port}{tooltip=The port (of) RoCEv2}{type=unsigned}{default=4791}\n\
             arg {number=1}{call=--report}{display=Report}{tooltip=Where}{type=fileselect}{mustexist=false}\n"
        );
    }

    #[test]
    fn names_and_folders() {
        assert_eq!(interface_of("rocescope-eth0"), Ok("eth0"));
        assert!(interface_of("rocescope-").is_err());
        assert!(interface_of("eth0").is_err());
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            personal_folders(env(&[("HOME", "/h")])),
            [
                PathBuf::from("/h/.config/wireshark/extcap"),
                PathBuf::from("/h/.local/lib/wireshark/extcap")
            ]
        );
        assert_eq!(
            personal_folders(env(&[("HOME", "/h"), ("WIRESHARK_CONFIG_DIR", "/w")]))[0],
            PathBuf::from("/w/extcap")
        );
        assert_eq!(
            personal_folders(env(&[("XDG_CONFIG_HOME", "/x")])),
            [PathBuf::from("/x/wireshark/extcap")]
        );
        assert_eq!(
            entry_script(Path::new("/opt/it's/rocescope")),
            "#!/bin/sh\n# Wireshark's extcap entry for rocescope (written by `rocescope extcap --install`).\n\
             exec '/opt/it'\\''s/rocescope' extcap \"$@\"\n"
        );
    }
}
