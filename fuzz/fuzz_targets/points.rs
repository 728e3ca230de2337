//! Any bytes as the timestamps of packets seen at capture points (`analyze --points`): each 10 bytes one
//! sighting (its point, its packet, whether it is a response, its stamp, any of 64 bits). The clock followed
//! per point, the offsets from the first sightings and the matcher over them: no panic, no hang, memory the
//! window's.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parsers::frame::Addr;
use rocescope::analysis::clock::Clock;
use rocescope::analysis::flow::FlowKey;
use rocescope::analysis::points::{self, MAX_POINTS, Matcher, Sighting};

fuzz_target!(|data: &[u8]| {
    let flow = FlowKey {
        src: Addr::V4([10, 0, 0, 1]),
        dst: Addr::V4([10, 0, 0, 2]),
        dest_qp: 0x11,
    };
    let points_n = usize::from(data.first().copied().unwrap_or(2) % MAX_POINTS as u8).max(2);
    let mut seen: Vec<Vec<(u64, Sighting)>> = vec![Vec::new(); points_n];
    let mut clocks: Vec<Clock> = vec![Clock::default(); points_n];
    for (n, c) in data
        .get(1..)
        .unwrap_or_default()
        .chunks_exact(10)
        .enumerate()
    {
        let point = usize::from(c[0]) % points_n;
        let s = Sighting {
            key: u64::from(c[1] & 0x7f),
            flow,
            psn: u32::from(c[1]),
            reverse: c[1] & 0x80 != 0,
        };
        let stamp = u64::from_le_bytes(c[2..10].try_into().unwrap_or_default());
        let (at, _) = clocks[point].stamp(n as u64 + 1, stamp);
        seen[point].push((at, s));
    }
    let offsets = points::offsets(&seen);
    let mut m = Matcher::new(points_n, 100_000_000).following_clocks();
    let mut all: Vec<(u64, usize, Sighting)> = seen
        .iter()
        .enumerate()
        .flat_map(|(p, v)| {
            let o = offsets.get(p).map_or(0, |o| o.nanos);
            v.iter()
                .map(move |(t, s)| (t.saturating_add_signed(o.saturating_neg()), p, *s))
        })
        .collect();
    all.sort_by_key(|x| x.0);
    let mut lost = 0u64;
    for (t, p, s) in all {
        m.see(p, t, s, &mut |_| lost += 1);
    }
    m.finish(&mut |_| lost += 1);
    let _ = m.tracks();
});
