//! Chain keys (ECDSA, Schnorr, vetKD) on PocketIC's II and test-keys
//! subnets, and HTTPS outcalls through PocketIC's mocking API.

use candid::{Decode, Encode, Principal};
use pocket_ic::{PocketIc, PocketIcBuilder};

use crate::user;

/// Forwards a call to the management canister with cycles attached; see the fixture.
const MANAGEMENT_FORWARDER: &str = include_str!("../../../sim/tests/fixtures/management_forwarder.wat");

/// `canister`'s call to the management canister through the forwarder:
/// the reply, or the reject code and message.
fn forwarded(
    pic: &PocketIc,
    canister: Principal,
    method: &str,
    arg: Vec<u8>,
    cycles: u64,
) -> Result<Vec<u8>, (u8, String)> {
    let mut call = cycles.to_le_bytes().to_vec();
    call.extend((method.len() as u32).to_le_bytes());
    call.extend(method.as_bytes());
    call.extend(arg);
    let seen = pic.update_call(canister, user(), "call", call).expect("the forwarder replies");
    match seen[0] {
        0 => Ok(seen[17..].to_vec()),
        code => Err((code, String::from_utf8_lossy(&seen[17..]).into_owned())),
    }
}

/// As PocketIC's own test of it: the II subnet holds `key_1`, the
/// test-keys subnet `test_key_1` and `dfx_test_key`; a canister on an
/// application subnet gets PocketIC's public keys and signatures k256
/// verifies; an instance without those subnets holds no key.
pub fn the_ii_and_test_keys_subnets_sign_with_pocket_ics_keys() {
    use ic_management_canister_types::{
        EcdsaCurve, EcdsaKeyId, EcdsaPublicKeyArgs, EcdsaPublicKeyResult, SignWithEcdsaArgs,
        SignWithEcdsaResult,
    };
    use ic_secp256k1::PocketIcMasterPublicKeyId as Master;
    use k256::ecdsa::signature::hazmat::PrehashVerifier;

    let key_id = |name: &str| EcdsaKeyId { curve: EcdsaCurve::Secp256k1, name: name.into() };
    let path = vec![b"my message".to_vec()];
    let signer = |pic: &PocketIc| {
        let app = pic.topology().get_app_subnets()[0];
        let canister = pic.create_canister_on_subnet(None, None, app);
        pic.add_cycles(canister, 100_000_000_000_000);
        pic.install_canister(canister, wat::parse_str(MANAGEMENT_FORWARDER).unwrap(), vec![], None);
        canister
    };

    let pic = PocketIcBuilder::new()
        .with_ii_subnet()
        .with_test_threshold_keys_subnet()
        .with_application_subnet()
        .build();
    let canister = signer(&pic);
    let hash = [9u8; 32].to_vec();
    for (name, master) in [
        ("key_1", Master::EcdsaKey1),
        ("test_key_1", Master::EcdsaTestKey1),
        ("dfx_test_key", Master::EcdsaDfxTestKey),
    ] {
        let args =
            EcdsaPublicKeyArgs { canister_id: None, derivation_path: path.clone(), key_id: key_id(name) };
        let reply = forwarded(&pic, canister, "ecdsa_public_key", Encode!(&args).unwrap(), 0).expect("a key");
        let key = Decode!(&reply, EcdsaPublicKeyResult).unwrap();
        let (expected, chain_code) = ic_secp256k1::PublicKey::derive_pocketic_key(master, &canister, &path);
        assert_eq!(
            (key.public_key.clone(), key.chain_code),
            (expected.serialize_sec1(true), chain_code.to_vec()),
            "{name}"
        );
        let args = SignWithEcdsaArgs {
            message_hash: hash.clone(),
            derivation_path: path.clone(),
            key_id: key_id(name),
        };
        let reply = forwarded(&pic, canister, "sign_with_ecdsa", Encode!(&args).unwrap(), 10_000_000_000)
            .expect("signed");
        let signature = Decode!(&reply, SignWithEcdsaResult).unwrap().signature;
        let verifying = k256::ecdsa::VerifyingKey::from_sec1_bytes(&key.public_key).unwrap();
        let signature = k256::ecdsa::Signature::try_from(signature.as_slice()).unwrap();
        verifying.verify_prehash(&hash, &signature).expect("k256 verifies it");
    }

    let without = PocketIc::new();
    let canister = signer(&without);
    let args =
        EcdsaPublicKeyArgs { canister_id: None, derivation_path: path, key_id: key_id("dfx_test_key") };
    let (code, message) =
        forwarded(&without, canister, "ecdsa_public_key", Encode!(&args).unwrap(), 0).unwrap_err();
    assert_eq!(code, 3);
    assert!(
        message.contains("Requested unknown threshold key: ecdsa:Secp256k1:dfx_test_key, existing keys: []"),
        "{message}"
    );
}

/// As PocketIC's mocking API is used: a Motoko oracle's outcall is listed
/// once it is made, a mocked response goes through its transform to it,
/// and nodes that disagree make it fail with the replica's reject.
pub fn a_motoko_oracles_outcall_is_mocked_transformed_and_delivered() {
    use pocket_ic::common::rest::{
        CanisterHttpHeader, CanisterHttpMethod, CanisterHttpReply, CanisterHttpResponse,
        MockCanisterHttpResponse,
    };

    #[derive(candid::CandidType, serde::Deserialize, Debug, PartialEq)]
    struct Header {
        name: String,
        value: String,
    }
    #[derive(candid::CandidType, serde::Deserialize, Debug, PartialEq)]
    struct Response {
        status: candid::Nat,
        headers: Vec<Header>,
        body: serde_bytes::ByteBuf,
    }
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/tests/fixtures/oracle.mo");
    let wasm = canister_wasm::elsewhere::motoko_source(&source).expect("moc builds it");
    let pic = PocketIc::new();
    let oracle = pic.create_canister();
    pic.add_cycles(oracle, 100_000_000_000_000);
    pic.install_canister(oracle, wasm, Encode!().unwrap(), None);
    let url = "https://prices.example/icp-usd";
    let reply = |body: &[u8]| {
        CanisterHttpResponse::CanisterHttpReply(CanisterHttpReply {
            status: 200,
            headers: vec![CanisterHttpHeader { name: "date".into(), value: "today".into() }],
            body: body.to_vec(),
        })
    };
    let fetch = || {
        let call = pic.submit_call(oracle, user(), "fetch", Encode!(&url).unwrap()).expect("submitted");
        pic.tick();
        pic.tick();
        let pending = pic.get_canister_http();
        assert_eq!(pending.len(), 1, "{pending:?}");
        (call, pending.into_iter().next().unwrap())
    };

    let (call, request) = fetch();
    assert_eq!((request.url.as_str(), request.http_method.clone()), (url, CanisterHttpMethod::GET));
    assert_eq!(request.max_response_bytes, Some(10_000));
    let mock = MockCanisterHttpResponse {
        subnet_id: request.subnet_id,
        request_id: request.request_id,
        response: reply(b"4.20"),
        additional_responses: vec![],
    };
    pic.mock_canister_http_response(mock);
    assert!(pic.get_canister_http().is_empty());
    let answer = Decode!(&pic.await_call(call).expect("a price"), Response).unwrap();
    let transformed = Header { name: "x-transformed".into(), value: "price".into() };
    assert_eq!(
        answer,
        Response { status: 200u8.into(), headers: vec![transformed], body: b"4.20".to_vec().into() }
    );

    // The nodes disagree: 12 other answers, each its own.
    let (call, request) = fetch();
    let others = (0..12).map(|i| reply(format!("4.2{i}").as_bytes())).collect();
    let mock = MockCanisterHttpResponse {
        subnet_id: request.subnet_id,
        request_id: request.request_id,
        response: reply(b"4.20"),
        additional_responses: others,
    };
    pic.mock_canister_http_response(mock);
    let refused = pic.await_call(call).unwrap_err();
    assert!(refused.reject_message.contains("No consensus could be reached."), "{}", refused.reject_message);
}

/// The workspace's Rust test canister, through ic-cdk's management
/// canister API (which prices each call with `ic0.cost_*`): its public
/// keys are PocketIC's, k256 and ed25519-dalek verify its ECDSA, BIP340 and
/// Ed25519 signatures, ic-vetkeys decrypts and verifies its vetKD key, and
/// its outcall is mocked and transformed.
pub fn a_rust_wallet_signs_with_every_key_type_and_fetches_through_ic_cdk() {
    use ic_management_canister_types::SchnorrAlgorithm;
    use ic_secp256k1::PocketIcMasterPublicKeyId as Secp256k1;
    use k256::ecdsa::signature::hazmat::PrehashVerifier;
    use pocket_ic::common::rest::{CanisterHttpReply, CanisterHttpResponse, MockCanisterHttpResponse};

    type Keyed = Result<(Vec<u8>, Vec<u8>), String>;
    let pic = PocketIcBuilder::new()
        .with_ii_subnet()
        .with_test_threshold_keys_subnet()
        .with_application_subnet()
        .build();
    let app = pic.topology().get_app_subnets()[0];
    let wallet = pic.create_canister_on_subnet(None, None, app);
    pic.add_cycles(wallet, 100_000_000_000_000);
    let wasm = canister_wasm::test_canister("wallet").expect("the wallet builds");
    pic.install_canister(wallet, wasm, Encode!().unwrap(), None);
    let call = |method: &str, arg: Vec<u8>| {
        let reply = pic.update_call(wallet, user(), method, arg).expect("the wallet replies");
        Decode!(&reply, Keyed).unwrap().unwrap_or_else(|e| panic!("{method}: {e}"))
    };
    let path = vec![b"wallet".to_vec()];
    let message = *b"Hello, world!===================";
    let bytes = |b: &[u8]| serde_bytes::ByteBuf::from(b.to_vec());

    let (public_key, signature) = call("ecdsa", Encode!(&"key_1", &bytes(&message)).unwrap());
    let pocket_ic = ic_secp256k1::PublicKey::derive_pocketic_key(Secp256k1::EcdsaKey1, &wallet, &path).0;
    assert_eq!(public_key, pocket_ic.serialize_sec1(true));
    let verifying = k256::ecdsa::VerifyingKey::from_sec1_bytes(&public_key).unwrap();
    verifying
        .verify_prehash(&message, &k256::ecdsa::Signature::try_from(signature.as_slice()).unwrap())
        .unwrap();

    let no_root: Option<serde_bytes::ByteBuf> = None;
    let arg = Encode!(&SchnorrAlgorithm::Bip340secp256k1, &"test_key_1", &bytes(&message), &no_root).unwrap();
    let (public_key, signature) = call("schnorr", arg);
    let pocket_ic =
        ic_secp256k1::PublicKey::derive_pocketic_key(Secp256k1::SchnorrTestKey1, &wallet, &path).0;
    assert_eq!(public_key, pocket_ic.serialize_sec1(true));
    let verifying = k256::schnorr::VerifyingKey::from_bytes(&public_key[1..]).unwrap();
    verifying
        .verify_prehash(&message, &k256::schnorr::Signature::try_from(signature.as_slice()).unwrap())
        .unwrap();
    // Taproot: the tweaked key verifies, as ic-secp256k1 checks BIP341.
    let root = Some(bytes(&[7; 32]));
    let arg = Encode!(&SchnorrAlgorithm::Bip340secp256k1, &"test_key_1", &bytes(&message), &root).unwrap();
    let (_, signature) = call("schnorr", arg);
    assert!(pocket_ic.verify_bip341_signature(&message, &signature, &[7; 32]));

    let arg = Encode!(&SchnorrAlgorithm::Ed25519, &"dfx_test_key", &bytes(&message), &no_root).unwrap();
    let (public_key, signature) = call("schnorr", arg);
    let pocket_ic = ic_ed25519::PublicKey::derive_pocketic_key(
        ic_ed25519::PocketIcMasterPublicKeyId::DfxTestKey,
        &wallet,
        &path,
    )
    .0;
    assert_eq!(public_key, pocket_ic.serialize_raw().to_vec());
    use ed25519_dalek::Verifier;
    let verifying = ed25519_dalek::VerifyingKey::from_bytes(&public_key.try_into().unwrap()).unwrap();
    verifying.verify(&message, &ed25519_dalek::Signature::from_slice(&signature).unwrap()).unwrap();

    let transport = ic_vetkeys::TransportSecretKey::from_seed(vec![9; 32]).unwrap();
    let arg = Encode!(&"dfx_test_key", &bytes(b"notes"), &bytes(b"alice"), &bytes(&transport.public_key()))
        .unwrap();
    let (public_key, encrypted) = call("vetkd", arg);
    let public_key = ic_vetkeys::DerivedPublicKey::deserialize(&public_key).unwrap();
    let encrypted = ic_vetkeys::EncryptedVetKey::deserialize(&encrypted).unwrap();
    encrypted.decrypt_and_verify(&transport, &public_key, b"alice").expect("ic-vetkeys verifies it");

    let fetch =
        pic.submit_call(wallet, user(), "fetch", Encode!(&"https://prices.example/").unwrap()).unwrap();
    pic.tick();
    let request = pic.get_canister_http().pop().expect("the outcall waits");
    let reply = CanisterHttpReply { status: 200, headers: vec![], body: b"4.20".to_vec() };
    pic.mock_canister_http_response(MockCanisterHttpResponse {
        subnet_id: request.subnet_id,
        request_id: request.request_id,
        response: CanisterHttpResponse::CanisterHttpReply(reply),
        additional_responses: vec![],
    });
    let fetched = Decode!(
        &pic.await_call(fetch).unwrap(),
        Result<ic_management_canister_types::HttpRequestResult, String>
    )
    .unwrap()
    .unwrap();
    assert_eq!((fetched.body, fetched.headers[0].value.as_str()), (b"4.20".to_vec(), "wallet"));
}
