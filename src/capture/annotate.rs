//! `analyze --annotate OUT.pcapng`: the capture again, as pcapng, with a comment on every frame an event of
//! the report names (its kind, message and flow), so that Wireshark shows rocescope's findings on the frames
//! (`frame.comment contains "stall"`). The frames, their times and lengths are those of the input.
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use parsers::savefile;

use crate::report::Report;
use crate::source::{FileSource, Next, PacketSource, SourceError};

/// The comments of each frame that events name, by frame number (1 for the capture's first).
#[derive(Debug, Default)]
pub struct Comments(BTreeMap<u64, Vec<String>>);

impl Comments {
    /// One comment per event of `report`: `rocescope: KIND: MESSAGE (flow #ID)`.
    pub fn of(report: &Report) -> Comments {
        let mut by_frame: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for e in &report.events {
            let flow = e
                .flow
                .map(|id| format!(" (flow #{id})"))
                .unwrap_or_default();
            by_frame
                .entry(e.frame)
                .or_default()
                .push(format!("rocescope: {}: {}{flow}", e.kind, e.message));
        }
        Comments(by_frame)
    }
}

/// What went wrong writing the annotated capture.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    #[error("reading the capture again")]
    Read(#[source] SourceError),
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What [`write`] wrote.
#[derive(Debug)]
pub struct Annotated {
    pub frames: u64,
    pub commented: u64,
    /// The input ended badly after `frames` (cut in a packet, a damaged block): the copy ends there too, as
    /// the analysis did.
    pub cut: Option<SourceError>,
}

/// Reads `input` once more and writes it to `out` as pcapng: one Interface Description Block per interface
/// of the input (its link type; nanosecond times), each frame an Enhanced Packet Block with `comments`'
/// lines for its number.
pub fn write(input: &Path, comments: &Comments, out: &Path) -> Result<Annotated, AnnotateError> {
    let mut source = FileSource::open(input).map_err(AnnotateError::Read)?;
    let failed = |source| AnnotateError::Write {
        path: out.to_path_buf(),
        source,
    };
    let file = File::create(out).map_err(failed)?;
    let mut out = BufWriter::new(file);
    let mut block = Vec::new();
    savefile::section_header_block(&mut block);
    // The input's (interface, link type) pairs in the order first seen: the output's interface ids.
    let mut interfaces: Vec<(u32, u16)> = Vec::new();
    let mut done = Annotated {
        frames: 0,
        commented: 0,
        cut: None,
    };
    let none = Vec::new();
    loop {
        let (packet, end) = match source.next() {
            Ok(Next::Packet { packet, end, .. }) => (packet, end),
            Ok(Next::End) => break,
            Ok(Next::Idle) => continue,
            Err(e) => {
                done.cut = Some(e);
                break;
            }
        };
        done.frames += 1;
        let key = (packet.interface, packet.linktype);
        let id = match interfaces.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                interfaces.push(key);
                savefile::interface_description_block(
                    &mut block,
                    packet.linktype,
                    0,
                    None,
                    Some(savefile::Resolution::Nanos),
                );
                interfaces.len() - 1
            }
        };
        let lines = comments.0.get(&done.frames).unwrap_or(&none);
        done.commented += u64::from(!lines.is_empty());
        savefile::enhanced_packet_block_with_comments(
            &mut block,
            id as u32,
            packet.ts_nanos,
            packet.data,
            packet.orig_len,
            lines,
        );
        out.write_all(&block).map_err(failed)?;
        block.clear();
        // Its bytes are written: a file read in place gives their pages back.
        source.done_before(end);
    }
    out.write_all(&block).map_err(failed)?;
    out.flush().map_err(failed)?;
    Ok(done)
}
