//! `callgen` CLI: same flags as gen_call.py, writes one compact JSON body to stdout.

use callgen::{Options, Size};
use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "usage: callgen [--op a|b] [--minutes F | --bytes N] [--seed N] [--call-id S]
  --op a       send-call-data body (operation A; sized in minutes only)
  --op b       create-call body (operation B, default)
  --minutes F  call length in minutes (default 10)
  --bytes N    grow the create-call timeline until about N bytes
  --seed N     PRNG seed (default 1)
  --call-id S  call id (default call_<seed>_<random hex>)";

struct Args {
    op_a: bool,
    opts: Options,
}

/// The parsed arguments, or `None` for `--help`.
fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let (mut op_a, mut minutes, mut bytes, mut seed, mut call_id) = (false, None, None, 1, None);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--op" => match value()?.as_str() {
                "a" => op_a = true,
                "b" => op_a = false,
                other => return Err(format!("--op must be a or b, not {other:?}")),
            },
            "--minutes" => {
                let v = value()?;
                match v.parse::<f64>() {
                    Ok(m) if m.is_finite() && m > 0.0 => minutes = Some(m),
                    _ => return Err(format!("--minutes needs a positive number, not {v:?}")),
                }
            }
            "--bytes" => {
                let v = value()?;
                bytes = Some(v.parse::<usize>().map_err(|_| format!("bad --bytes {v:?}"))?);
            }
            "--seed" => {
                let v = value()?;
                seed = v.parse::<u64>().map_err(|_| format!("bad --seed {v:?}"))?;
            }
            "--call-id" => call_id = Some(value()?),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let size = match (minutes, bytes) {
        (Some(_), Some(_)) => return Err("give --minutes or --bytes, not both".into()),
        (_, Some(b)) => Size::Bytes(b),
        (m, None) => Size::Minutes(m.unwrap_or(10.0)),
    };
    let opts = Options { size, seed, call_id };
    Ok(Some(Args { op_a, opts }))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("callgen: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let body = if args.op_a { callgen::send_call_data(&args.opts) } else { callgen::create_call(&args.opts) };
    let mut out = std::io::stdout().lock();
    match out.write_all(&body).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("callgen: writing stdout: {e}");
            ExitCode::FAILURE
        }
    }
}
