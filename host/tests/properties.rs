//! Property tests: the parsers and gates that face untrusted input, driven
//! with generated inputs (cargo-fuzz needs a nightly compiler, which this
//! project's toolchain does not have; proptest reaches the same code on
//! stable). `just test` runs a smoke number of cases; `just fuzz` runs many
//! (`PROPTEST_CASES`). Each property prints how many inputs it ran.

use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;
use verbgate::dispatch::request::decode;
use verbgate::exec::render_argv;
use verbgate::registry::schema::{compile, validate_args};
use verbgate::runtime::model::Arg;
use verbgate::trust::{sign_component, verify_component, TrustStore};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

fn report(name: &str) {
    eprintln!("property {name}: {} inputs, 0 failures", cases());
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![Just("op"), Just("ops"), Just("args"), Just("help"), Just("git.log"), Just("--x"), Just("schema_fingerprint"), Just("dry_run")]
            .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop_oneof![Just("op".to_string()), Just("ops".to_string()), Just("args".to_string()), Just("help".to_string()), ".{0,6}"], inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn arb_arg() -> impl Strategy<Value = Arg> {
    let text = prop_oneof![".{0,10}", Just("-c".to_string()), Just("--upload-pack=x".to_string()), Just("a\0b".to_string()), Just("--".to_string())];
    prop_oneof![
        text.clone().prop_map(Arg::Value),
        text.clone().prop_map(Arg::Literal),
        (prop_oneof!["[a-z][a-z-]{0,6}", ".{0,4}"], text.clone()).prop_map(|(name, value)| Arg::Option { name, value }),
        Just(Arg::EndOfOptions),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// The request decoder never panics, and whatever it accepts respects the batch cap.
    #[test]
    fn request_decoder_never_panics(v in arb_json(), cap in 1usize..10) {
        if let Ok(verbgate::dispatch::request::Request::Ops(ops)) = decode(&v, cap) {
            prop_assert!(!ops.is_empty() && ops.len() <= cap);
        }
    }

    /// No caller value ever reaches an option position, and no word has NUL.
    #[test]
    fn argv_never_puts_a_caller_value_in_an_option_position(args in prop::collection::vec(arb_arg(), 0..8)) {
        if let Ok(words) = render_argv(&args, Path::new("/")) {
            prop_assert_eq!(words.len(), args.len());
            let mut after_marker = false;
            for (arg, word) in args.iter().zip(&words) {
                prop_assert!(!word.contains('\0'));
                match arg {
                    Arg::Value(v) => {
                        prop_assert_eq!(word, v);
                        prop_assert!(after_marker || !word.starts_with('-'));
                    }
                    Arg::Option { name, value } => prop_assert_eq!(word, &format!("--{name}={value}")),
                    Arg::EndOfOptions => after_marker = true,
                    _ => {}
                }
            }
        }
    }

    /// The schema gate never panics, and an accepted object has no undeclared keys.
    #[test]
    fn schema_gate_accepts_only_declared_params(v in arb_json()) {
        let schema = json!({"type": "object", "properties": {"op": {"type": "string"}, "args": {"type": "integer", "maximum": 10}}, "additionalProperties": false});
        let validator = compile(&schema).unwrap();
        if validate_args(&validator, &schema, "x.y", &v).is_ok() {
            if let Value::Object(m) = &v {
                prop_assert!(m.keys().all(|k| k == "op" || k == "args"));
            }
        }
    }

    /// Arbitrary bytes after a component preamble never verify and never panic.
    #[test]
    fn signature_parser_survives_garbage(tail in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut bytes = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        bytes.extend(tail);
        prop_assert!(verify_component(&bytes, &TrustStore::default()).is_err());
    }
}

/// A signed component with any one byte changed never verifies.
#[test]
fn any_flipped_byte_breaks_the_signature() {
    let dir = tempfile::tempdir().unwrap();
    let files = verbgate::trust::keys::generate(dir.path(), "p", false).unwrap();
    verbgate::trust::TrustStore::add(&dir.path().join("trust"), &files.public, None).unwrap();
    let store = TrustStore::load(&dir.path().join("trust")).unwrap();
    let sk = verbgate::trust::keys::read_secret_key(&files.secret).unwrap();
    let pk = verbgate::trust::keys::read_public_key(&files.public).unwrap();
    let signed = sign_component(verbgate::registry::bundled::BUNDLED[0].bytes, &sk, &pk).unwrap();
    assert!(verify_component(&signed, &store).is_ok());
    // Every byte of the preamble and signature section, exhaustively.
    for at in 0..300.min(signed.len()) {
        let mut bad = signed.clone();
        bad[at] ^= 0x01;
        assert!(verify_component(&bad, &store).is_err(), "flipping byte {at} went unnoticed");
    }
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() });
    runner
        .run(&(0..signed.len(), 1u8..=255), |(at, mask)| {
            let mut bad = signed.clone();
            bad[at] ^= mask;
            prop_assert!(verify_component(&bad, &store).is_err(), "flipping byte {} went unnoticed", at);
            Ok(())
        })
        .unwrap();
    report("any_flipped_byte_breaks_the_signature");
}
