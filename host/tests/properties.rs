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
        prop_oneof![
            Just("op"),
            Just("ops"),
            Just("args"),
            Just("help"),
            Just("git.log"),
            Just("--x"),
            Just("schema_fingerprint"),
            Just("dry_run")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("op".to_string()),
                        Just("ops".to_string()),
                        Just("args".to_string()),
                        Just("help".to_string()),
                        ".{0,6}"
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn arb_arg() -> impl Strategy<Value = Arg> {
    let text = prop_oneof![
        ".{0,10}",
        Just("-c".to_string()),
        Just("--upload-pack=x".to_string()),
        Just("a\0b".to_string()),
        Just("--".to_string())
    ];
    prop_oneof![
        text.clone().prop_map(Arg::Value),
        text.clone().prop_map(Arg::Literal),
        (prop_oneof!["[a-z][a-z-]{0,6}", ".{0,4}"], text.clone())
            .prop_map(|(name, value)| Arg::Option { name, value }),
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
        if let Ok(words) = render_argv(&args, Path::new("/"), Path::new("/")) {
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

/// A bundled component signed by a fresh key, and a trust store holding
/// that key (the directory keeps the store's files alive).
fn signed_bundled() -> (tempfile::TempDir, TrustStore, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let files = verbgate::trust::keys::generate(dir.path(), "p", false).unwrap();
    verbgate::trust::TrustStore::add(&dir.path().join("trust"), &files.public, None).unwrap();
    let store = TrustStore::load(&dir.path().join("trust")).unwrap();
    let sk = verbgate::trust::keys::read_secret_key(&files.secret).unwrap();
    let pk = verbgate::trust::keys::read_public_key(&files.public).unwrap();
    let signed = sign_component(verbgate::registry::bundled::BUNDLED[0].bytes, &sk, &pk).unwrap();
    (dir, store, signed)
}

/// A signed component with any one byte changed never verifies.
#[test]
fn any_flipped_byte_breaks_the_signature() {
    let (_dir, store, signed) = signed_bundled();
    assert!(verify_component(&signed, &store).is_ok());
    // Every byte of the preamble and signature section, exhaustively.
    for at in 0..300.min(signed.len()) {
        let mut bad = signed.clone();
        bad[at] ^= 0x01;
        assert!(verify_component(&bad, &store).is_err(), "flipping byte {at} went unnoticed");
    }
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&(0..signed.len(), 1u8..=255), |(at, mask)| {
            let mut bad = signed.clone();
            bad[at] ^= mask;
            prop_assert!(
                verify_component(&bad, &store).is_err(),
                "flipping byte {} went unnoticed",
                at
            );
            Ok(())
        })
        .unwrap();
    report("any_flipped_byte_breaks_the_signature");
}

/// The signature section with its structure changed in ways `wasmsign2`'s
/// parser tolerates: each change leaves the signatures themselves intact,
/// so only the host's canonicality check can notice.
#[derive(Debug, Clone)]
enum SectionEdit {
    /// Bytes appended inside the payload, after the last entry.
    TrailingPayload(Vec<u8>),
    /// An extra signature entry with an algorithm id other than ed25519.
    UnknownAlgorithm { alg: u8, body: Vec<u8> },
    /// A number re-encoded in more LEB128 bytes than it needs.
    NonMinimalSize { extra: usize },
    /// The same section once more, right after the first.
    Duplicate,
}

fn arb_edit() -> impl Strategy<Value = SectionEdit> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 1..40).prop_map(SectionEdit::TrailingPayload),
        (
            any::<u8>().prop_filter("not ed25519", |a| *a != 0x01),
            prop::collection::vec(any::<u8>(), 0..80)
        )
            .prop_map(|(alg, body)| SectionEdit::UnknownAlgorithm { alg, body }),
        (1usize..4).prop_map(|extra| SectionEdit::NonMinimalSize { extra }),
        Just(SectionEdit::Duplicate),
    ]
}

fn leb(mut v: usize, extra: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 && extra == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
        if v == 0 {
            out.extend(std::iter::repeat_n(0x80, extra - 1));
            out.push(0x00);
            return out;
        }
    }
}

/// The section as (payload, content) from signed bytes.
fn split_signed(signed: &[u8]) -> (Vec<u8>, Vec<u8>) {
    use std::io::Cursor;
    use wasmsign2::{Module, Section, SectionLike};
    let mut cursor = Cursor::new(signed);
    let stream = Module::init_from_reader(&mut cursor).unwrap();
    let mut sections = Module::iterate(stream).unwrap();
    let Section::Custom(c) = sections.next().unwrap().unwrap() else {
        panic!("no signature section")
    };
    let end = cursor.position() as usize;
    (c.payload().to_vec(), signed[end..].to_vec())
}

fn assemble(payload: &[u8], size_extra: usize, content: &[u8], duplicate: bool) -> Vec<u8> {
    let mut section = leb("signature".len(), 0);
    section.extend_from_slice(b"signature");
    section.extend_from_slice(payload);
    let mut out = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
    let copies = if duplicate { 2 } else { 1 };
    for _ in 0..copies {
        out.push(0);
        out.extend(leb(section.len(), size_extra));
        out.extend_from_slice(&section);
    }
    out.extend_from_slice(content);
    out
}

/// Any change to the signature section's bytes is refused, including the
/// ones the signature format's parser tolerates (unknown algorithm
/// entries, trailing bytes, non-minimal encodings, a second section) —
/// "any byte changed after signing is refused" covers the section too.
#[test]
fn any_change_to_the_signature_section_is_refused() {
    let (_dir, store, signed) = signed_bundled();
    let (payload, content) = split_signed(&signed);
    // Reassembling without an edit gives the signed bytes back, and they verify.
    assert_eq!(assemble(&payload, 0, &content, false), signed);
    assert!(verify_component(&signed, &store).is_ok());
    let data = wasmsign2::SignatureData::deserialize(&payload).unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&arb_edit(), |edit| {
            let bad = match &edit {
                SectionEdit::TrailingPayload(junk) => {
                    let mut p = payload.clone();
                    p.extend_from_slice(junk);
                    assemble(&p, 0, &content, false)
                }
                SectionEdit::UnknownAlgorithm { alg, body } => {
                    // The entry as the format writes one: key id, algorithm, signature.
                    let mut entry = leb(0, 0);
                    entry.push(*alg);
                    entry.extend(leb(body.len(), 0));
                    entry.extend_from_slice(body);
                    let mut d = data.clone();
                    let set = &d.signed_hashes_set[0];
                    let mut sh = leb(set.hashes.len(), 0);
                    for h in &set.hashes {
                        sh.extend_from_slice(h);
                    }
                    sh.extend(leb(set.signatures.len() + 1, 0));
                    for sig in &set.signatures {
                        let one = sig.serialize().unwrap();
                        sh.extend(leb(one.len(), 0));
                        sh.extend(one);
                    }
                    sh.extend(leb(entry.len(), 0));
                    sh.extend(entry);
                    d.signed_hashes_set.clear();
                    let mut p = d.serialize().unwrap();
                    // signed_hashes_set count is now 0; write 1 and the edited set.
                    p.truncate(p.len() - 1);
                    p.extend(leb(1, 0));
                    p.extend(leb(sh.len(), 0));
                    p.extend(sh);
                    // The parser still accepts it (and drops the unknown entry).
                    prop_assert_eq!(
                        wasmsign2::SignatureData::deserialize(&p).unwrap(),
                        data.clone()
                    );
                    assemble(&p, 0, &content, false)
                }
                SectionEdit::NonMinimalSize { extra } => {
                    assemble(&payload, *extra, &content, false)
                }
                SectionEdit::Duplicate => assemble(&payload, 0, &content, true),
            };
            prop_assert_ne!(&bad, &signed);
            let refused = verify_component(&bad, &store);
            prop_assert!(refused.is_err(), "{:?} went unnoticed", edit);
            Ok(())
        })
        .unwrap();
    report("any_change_to_the_signature_section_is_refused");
}
