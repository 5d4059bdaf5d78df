//! bosun-kit: the ground floor of bosund's areas, what every one of them uses and none of it
//! about a domain: the restart budget every supervisor keeps ([`supervision`]), "the current"
//! actor of a kind across restarts ([`handle`]), blocking work off the async workers
//! ([`offload`]), the named crash points of the crash tests ([`crash`]), what the areas' error
//! enums share ([`error`]), an edit's keep / clear / set of one field ([`edit`]), finding a
//! record by the start of its id ([`prefix`]), the keychain where secret values live
//! ([`keychain`]), bosun's own git calls ([`git`]), and how an area tells what happened in it
//! ([`tell`]).

pub mod crash;
pub mod edit;
pub mod error;
pub mod git;
pub mod handle;
pub mod keychain;
pub mod offload;
pub mod prefix;
pub mod supervision;
pub mod tell;
