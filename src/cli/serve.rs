//! `crashsim serve NAME`: see `crate::adapter::serve`.

use super::ServeArgs;
use crate::exit::Exit;

pub fn serve(args: &ServeArgs) -> Exit {
    match crate::adapter::serve::main(&args.implementation) {
        0 => Exit::Pass,
        _ => Exit::BadInput,
    }
}
