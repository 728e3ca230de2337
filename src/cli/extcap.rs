//! `rocescope extcap`: the flags Wireshark's extcap interface passes (Wireshark's doc/extcap.adoc), and the
//! options rocescope offers in Wireshark's capture dialog, each an ordinary flag whose help is the dialog's
//! text (one place for each).
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use rocescope::capture;
use rocescope::report::{Listing, Output};
use rocescope::source::LiveConfig;

use super::{AnalysisFlags, ConfigError, RoceFlags, pipeline_config};
use crate::commands::capture::ReportTo;
use crate::commands::extcap::{Call, DialogOption, Kind, interface_of};
use crate::commands::{self, extcap};

/// `rocescope extcap` options. Wireshark runs it through the entry `--install` writes.
#[derive(Args, Debug, Clone)]
pub struct ExtcapArgs {
    /// (Wireshark) List the interfaces: rocescope-IFACE for each capture device.
    #[arg(long)]
    pub extcap_interfaces: bool,
    /// (Wireshark) The version of Wireshark asking.
    #[arg(long, value_name = "VERSION")]
    pub extcap_version: Option<String>,
    /// (Wireshark) The interface asked about or captured on: rocescope-IFACE.
    #[arg(long, value_name = "NAME")]
    pub extcap_interface: Option<String>,
    /// (Wireshark) The interface's link type.
    #[arg(long, requires = "extcap_interface")]
    pub extcap_dlts: bool,
    /// (Wireshark) The options of the capture dialog.
    #[arg(long)]
    pub extcap_config: bool,
    /// (Wireshark) The capture filter (BPF); without --capture, only checked.
    #[arg(long, value_name = "BPF", requires = "extcap_interface")]
    pub extcap_capture_filter: Option<String>,
    /// (Wireshark) Capture, writing the frames (pcap) to --fifo.
    #[arg(long, requires_all = ["extcap_interface", "fifo"])]
    pub capture: bool,
    /// (Wireshark) Where to write the frames.
    #[arg(long, value_name = "PATH")]
    pub fifo: Option<PathBuf>,
    /// (Wireshark) Accepted; rocescope says nothing more.
    #[arg(long)]
    pub debug: bool,
    /// (Wireshark) Accepted; rocescope writes no log.
    #[arg(long, value_name = "FILE")]
    pub debug_file: Option<PathBuf>,
    /// Write rocescope's report to this file when the capture stops (JSON when its name ends in .json).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Serve the analysis as OpenMetrics at http://ADDR:PORT/metrics while capturing.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub roce: RoceFlags,
    #[command(flatten)]
    pub analysis: AnalysisFlags,
    /// Write Wireshark's entry for rocescope into its personal extcap folders (Wireshark 4.0's
    /// configuration folder and 4.1's ~/.local/lib/wireshark/extcap), or into --install-dir.
    #[arg(long)]
    pub install: bool,
    /// With --install: this folder instead.
    #[arg(long, value_name = "DIR", requires = "install")]
    pub install_dir: Option<PathBuf>,
}

/// The flags in Wireshark's capture dialog: their labels there and what each takes (the tooltip is the
/// flag's help).
const DIALOG: [(&str, &str, Kind); 4] = [
    ("port", "RoCEv2 UDP port", Kind::Unsigned),
    ("stall_ms", "Stall after (ms)", Kind::Unsigned),
    ("report", "Report file", Kind::NewFile),
    ("metrics", "Metrics at ADDR:PORT", Kind::Text),
];

/// The dialog's options, from the flags' own help and defaults.
fn dialog() -> Vec<DialogOption> {
    let cmd = ExtcapArgs::augment_args(clap::Command::new("extcap"));
    DIALOG
        .iter()
        .filter_map(|&(id, label, kind)| {
            let arg = cmd.get_arguments().find(|a| a.get_id() == id)?;
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            Some(DialogOption {
                call: format!("--{}", arg.get_long()?),
                display: label.to_string(),
                tooltip: help,
                kind,
                default: arg
                    .get_default_values()
                    .first()
                    .map(|v| v.to_string_lossy().into_owned()),
            })
        })
        .collect()
}

impl ExtcapArgs {
    fn interface(&self) -> Result<String, ConfigError> {
        let name = self.extcap_interface.as_deref().unwrap_or_default();
        interface_of(name)
            .map(str::to_string)
            .map_err(|e| ConfigError::Usage(anyhow::Error::msg(e)))
    }

    pub fn config(&self) -> Result<extcap::Config, ConfigError> {
        let call = if self.install {
            Call::Install {
                folders: match &self.install_dir {
                    Some(d) => vec![d.clone()],
                    None => extcap::personal_folders(|k| std::env::var(k).ok()),
                },
                exe: std::env::current_exe().map_err(|e| {
                    ConfigError::Runtime(
                        anyhow::Error::new(e).context("cannot tell where rocescope is"),
                    )
                })?,
            }
        } else if self.extcap_interfaces {
            Call::Interfaces
        } else if self.extcap_dlts {
            Call::Dlts {
                interface: self.interface()?,
            }
        } else if self.extcap_config {
            Call::Options
        } else if self.capture {
            Call::Capture(Box::new(self.capture_config()?))
        } else if let Some(filter) = &self.extcap_capture_filter {
            Call::CheckFilter {
                interface: self.interface()?,
                filter: filter.clone(),
            }
        } else {
            return Err(ConfigError::Usage(anyhow::anyhow!(
                "extcap: nothing asked (Wireshark passes --extcap-interfaces, --extcap-dlts, --extcap-config or --capture; \
                 to let it, run rocescope extcap --install)"
            )));
        };
        Ok(extcap::Config {
            call,
            options: dialog(),
        })
    }

    fn capture_config(&self) -> Result<commands::capture::Config, ConfigError> {
        let interface = self.interface()?;
        let session = capture::Config {
            live: LiveConfig {
                // Wireshark passes an empty filter when none was typed: the default one then.
                filter: self
                    .extcap_capture_filter
                    .clone()
                    .filter(|f| !f.trim().is_empty()),
                roce_port: self.roce.port,
                ..LiveConfig::new(&interface)
            },
            pipeline: pipeline_config(&self.roce, &self.analysis),
            write: self.fifo.clone(),
            rotation: Default::default(),
            count: None,
            duration: None,
            ring: false,
        };
        Ok(commands::capture::Config {
            session,
            command: Vec::new(),
            grace: Duration::ZERO,
            // Wireshark shows what an extcap writes to standard error as an error.
            quiet: true,
            output: match &self.report {
                Some(path) if path.extension().is_some_and(|e| e == "json") => Output::Json,
                _ => Output::Text { top: None },
            },
            fail_on: Vec::new(),
            listing: Listing::default(),
            reports: None,
            tui: false,
            metrics: self.metrics,
            announce_metrics: false,
            report: match &self.report {
                Some(path) => ReportTo::File(path.clone()),
                None => ReportTo::Nowhere,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dialog_flag_exists() {
        let options = dialog();
        let calls: Vec<&str> = options.iter().map(|o| o.call.as_str()).collect();
        assert_eq!(calls, ["--port", "--stall-ms", "--report", "--metrics"]);
        assert_eq!(options[0].default.as_deref(), Some("4791"));
        assert_eq!(
            options[2].tooltip,
            "Write rocescope's report to this file when the capture stops (JSON when its name ends in .json)"
        );
    }
}
