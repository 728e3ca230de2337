//! `lab up`, `lab down` and `lab status`.

use std::fs;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};

use super::build::{Builder, preflight};
use super::ip::Tools;
use super::layout::{Config, Layout};
use super::state::{Item, State, load_state, remove_state, save_state, state_path};
use super::system::{gids, port_state, rdma_dev_exists, require_root, roce_v2_ipv4_gid};
use super::undo::undo_all;

pub fn up(cfg: &Config) -> anyhow::Result<ExitCode> {
    let path = state_path();
    let layout = Layout::of(cfg)?;
    // Privilege first: another user may not even read the state file's directory.
    require_root()?;
    if let Some(st) = load_state(&path)? {
        already_up(&st, &layout, &path)?;
        return Ok(ExitCode::SUCCESS);
    }
    let ctx = Tools::find()?;
    let net = ctx.snapshot()?;
    let move_local = preflight(&layout, &net)?;
    let st = build_recorded(&ctx, &path, layout, move_local)?;
    print_built(&st, &path, move_local);
    Ok(ExitCode::SUCCESS)
}

/// A lab is recorded in `path`: fine when it is complete and `layout`'s, an error otherwise.
fn already_up(st: &State, layout: &Layout, path: &Path) -> anyhow::Result<()> {
    let c = &st.layout;
    if !st.complete {
        bail!(
            "an earlier `lab up` did not finish (state in {}): run `rocescope lab down` first",
            path.display()
        );
    }
    if c != layout {
        bail!(
            "already up with other settings ({} on {}, {} on {}; state in {}): `rocescope lab down` first",
            c.rxe_a,
            c.veth_a,
            c.rxe_b,
            c.veth_b,
            path.display()
        );
    }
    say!(
        "lab: already up ({} on {}, {} on {}; state in {}): `rocescope lab status` checks it, `rocescope lab down` removes it",
        c.rxe_a,
        c.veth_a,
        c.rxe_b,
        c.veth_b,
        path.display()
    );
    Ok(())
}

/// Builds `layout`, recording each item in `path`; on a failure, undoes what was built (what cannot be
/// undone stays recorded).
fn build_recorded(
    ctx: &Tools,
    path: &Path,
    layout: Layout,
    move_local: bool,
) -> anyhow::Result<State> {
    let mut st = State {
        version: 1,
        complete: false,
        layout,
        items: Vec::new(),
    };
    save_state(path, &st, true)?;
    let built = Builder {
        ctx,
        st: &mut st,
        path,
    }
    .build(move_local);
    // the step's error, then what its undoing did: the order of the line `lab up` says
    if let Err(e) = built {
        let (_, failed) = undo_all(ctx, &st.items);
        if failed.is_empty() {
            remove_state(path);
            bail!("{e:#}; lab up undid everything it had done");
        }
        let n = failed.len();
        let first = failed[0].1.clone();
        st.items = failed.into_iter().map(|(i, _)| i).collect();
        let _ = save_state(path, &st, false);
        bail!(
            "{e:#}; undoing it failed too for {n} item(s) ({first}): see `rocescope lab status`, then `rocescope lab down` (state in {})",
            path.display()
        );
    }
    st.complete = true;
    save_state(path, &st, false)?;
    Ok(st)
}

/// What `up` built, and what to do next.
fn print_built(st: &State, path: &Path, move_local: bool) {
    let cfg = &st.layout;
    say!(
        "lab up: Soft-RoCE loopback over the veth pair {} <-> {}",
        cfg.veth_a,
        cfg.veth_b
    );
    for (rxe, dev, addr) in [
        (&cfg.rxe_a, &cfg.veth_a, cfg.addr_a),
        (&cfg.rxe_b, &cfg.veth_b, cfg.addr_b),
    ] {
        let g = roce_v2_ipv4_gid(rxe, addr);
        say!(
            "  {rxe:<12} on {dev:<8} {addr}/32  GID index {}  {}  port {}",
            g.as_ref().map_or("?".into(), |g| g.index.to_string()),
            g.as_ref().map_or("?".into(), |g| g.gid.to_string()),
            port_state(rxe, "state")
        );
    }
    let moved = if move_local {
        format!("; local table rule moved from pref 0 to {}", cfg.pref_local)
    } else {
        String::new()
    };
    say!(
        "  routing: rules pref {}/{} (iif lo) -> tables {}/{}{moved}; static neighbours",
        cfg.pref_a,
        cfg.pref_b,
        cfg.table_a,
        cfg.table_b
    );
    for it in &st.items {
        if let Item::Sysctl {
            key,
            previous,
            value,
        } = it
            && key.contains("/all/")
        {
            say!(
                "  changed: {} {previous} -> {value} (lab down restores it)",
                key.replace('/', ".")
            );
        }
    }
    say!("  capture on: {} (it carries both directions)", cfg.veth_a);
    say!("  state: {}", path.display());
    say!("next: {}", cfg.gen_command());
    say!("then: rocescope lab down");
}

pub fn down() -> anyhow::Result<ExitCode> {
    let path = state_path();
    require_root()?;
    let Some(mut st) = load_state(&path)? else {
        bail!(
            "not up (no state file {}): nothing to remove",
            path.display()
        );
    };
    let ctx = Tools::find()?;
    let (done, failed) = undo_all(&ctx, &st.items);
    for d in &done {
        say!("  {d}");
    }
    if !failed.is_empty() {
        let n = failed.len();
        let first = failed[0].1.clone();
        st.items = failed.into_iter().map(|(i, _)| i).collect();
        save_state(&path, &st, false)?;
        bail!(
            "{n} item(s) could not be undone ({first}); they stay in {}: fix that and run `rocescope lab down` again",
            path.display()
        );
    }
    fs::remove_file(&path).with_context(|| {
        format!(
            "undone, but cannot remove the state file {}",
            path.display()
        )
    })?;
    remove_state(&path);
    say!(
        "lab down: {} undone ({} on {}, {} on {})",
        done.len(),
        st.layout.rxe_a,
        st.layout.veth_a,
        st.layout.rxe_b,
        st.layout.veth_b
    );
    Ok(ExitCode::SUCCESS)
}

pub fn status() -> anyhow::Result<ExitCode> {
    let path = state_path();
    let Some(st) = load_state(&path)? else {
        bail!(
            "not up (no state file {}): `rocescope lab up` builds it",
            path.display()
        );
    };
    let ctx = Tools::find()?;
    let net = ctx.snapshot()?;
    let c = &st.layout;
    say!("lab: state {}", path.display());
    let mut missing = Vec::new();
    for it in &st.items {
        let ok = it.present(&net);
        say!(
            "  {:<8} {}",
            if ok { "present" } else { "MISSING" },
            it.describe()
        );
        if !ok {
            missing.push(it.describe());
        }
    }
    let mut broken = Vec::new();
    for (rxe, addr) in [(&c.rxe_a, c.addr_a), (&c.rxe_b, c.addr_b)] {
        broken.extend(rxe_status(rxe, addr));
    }
    if !st.complete {
        broken.insert(0, "lab up did not finish".into());
    }
    if missing.is_empty() && broken.is_empty() {
        say!(
            "lab: up, all {} items present; next: {}",
            st.items.len(),
            c.gen_command()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut why = broken;
    if !missing.is_empty() {
        why.insert(
            0,
            format!("{} of {} items missing", missing.len(), st.items.len()),
        );
    }
    bail!(
        "partly broken: {}: `rocescope lab down` removes the rest, then `rocescope lab up`",
        why.join(", ")
    )
}

/// Says how rxe device `rxe` is (port state, GIDs); returns what is wrong with it for a lab on `addr`.
fn rxe_status(rxe: &str, addr: Ipv4Addr) -> Vec<String> {
    if !rdma_dev_exists(rxe) {
        say!("  {rxe}: no such RDMA device");
        return vec![format!("{rxe} missing")];
    }
    let state = port_state(rxe, "state");
    let gl: Vec<String> = gids(rxe)
        .iter()
        .map(|g| format!("{} {} ({}, {})", g.index, g.gid, g.kind, g.ndev))
        .collect();
    say!(
        "  {rxe}: port 1 {state} ({}), GIDs: {}",
        port_state(rxe, "phys_state"),
        if gl.is_empty() {
            "none".into()
        } else {
            gl.join(", ")
        }
    );
    let mut broken = Vec::new();
    if state != "ACTIVE" {
        broken.push(format!("{rxe} port {state}"));
    }
    if roce_v2_ipv4_gid(rxe, addr).is_none() {
        broken.push(format!("{rxe} has no RoCE v2 GID ::ffff:{addr}"));
    }
    broken
}
