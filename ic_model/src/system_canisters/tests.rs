use super::cycles_ledger::{self, CreateCanisterError, CreateCanisterSuccess, WithdrawError};
use super::icp_ledger::{TimeStamp, Tokens, TransferArgs};
use super::icrc1::{Account, TransferArg, TransferError};
use super::*;
use candid::{Decode, Encode, Nat};

const NOW: u64 = 1_700_000_000_000_000_000;

/// A host with two subnets that creates canisters with ids counting up,
/// and knows their balances.
#[derive(Default)]
struct FakeHost {
    created: Vec<(Principal, Vec<Principal>, u128)>,
    subnets_used: Vec<Principal>,
    refuse: bool,
}

fn subnet(n: u8) -> Principal {
    Principal::from_slice(&[n; 29])
}

impl Host for FakeHost {
    fn subnets(&self) -> Vec<Principal> {
        vec![subnet(1), subnet(2)]
    }

    fn time(&self) -> u64 {
        NOW
    }

    fn create_canister(
        &mut self,
        subnet: Principal,
        settings: ic_management_canister_types::CanisterSettings,
        cycles: u128,
    ) -> Result<Principal, String> {
        if self.refuse {
            return Err("the subnet is full".into());
        }
        let id = Principal::from_slice(&[self.created.len() as u8 + 10, 1, 1]);
        self.subnets_used.push(subnet);
        self.created.push((id, settings.controllers.unwrap_or_default(), cycles));
        Ok(id)
    }

    fn deposit_cycles(&mut self, canister: Principal, cycles: u128) -> Result<(), String> {
        let Some(created) = self.created.iter_mut().find(|c| c.0 == canister) else {
            return Err(format!("Canister {canister} not found"));
        };
        created.2 += cycles;
        Ok(())
    }
}

/// A user's self-authenticating id (its last byte is 2).
fn user(n: u8) -> Principal {
    let mut id = [n; 29];
    id[28] = 2;
    Principal::from_slice(&id)
}

fn account(owner: Principal) -> Account {
    Account { owner, subaccount: None }
}

fn balance(system: &SystemCanisters, ledger: Principal, owner: Principal) -> u128 {
    let answer =
        system.query(&FakeHost::default(), ledger, "icrc1_balance_of", &Encode!(&account(owner)).unwrap());
    let balance = Decode!(&answer.unwrap().unwrap(), Nat).unwrap();
    u128::try_from(&balance.0).unwrap()
}

fn icrc1_transfer(
    system: &mut SystemCanisters,
    ledger: Principal,
    from: Principal,
    to: Principal,
    amount: u128,
    fee: Option<u128>,
) -> Result<Nat, TransferError> {
    let arg = TransferArg {
        from_subaccount: None,
        to: account(to),
        amount: amount.into(),
        fee: fee.map(Nat::from),
        memo: None,
        created_at_time: None,
    };
    let answer =
        system.update(&mut FakeHost::default(), ledger, from, "icrc1_transfer", &Encode!(&arg).unwrap());
    Decode!(&answer.unwrap().unwrap(), Result<Nat, TransferError>).unwrap()
}

#[test]
fn anonymous_holds_what_pocket_ic_gives_it_and_no_one_else_anything() {
    let system = SystemCanisters::new();
    assert_eq!(balance(&system, ICP_LEDGER, Principal::anonymous()), 100_000_000_000_000_000);
    assert_eq!(balance(&system, CYCLES_LEDGER, Principal::anonymous()), 1 << 127);
    assert_eq!(balance(&system, ICP_LEDGER, user(1)), 0);
    let host = FakeHost::default();
    let decimals = |ledger| {
        Decode!(&system.query(&host, ledger, "icrc1_decimals", &Encode!().unwrap()).unwrap().unwrap(), u8)
            .unwrap()
    };
    assert_eq!((decimals(ICP_LEDGER), decimals(CYCLES_LEDGER)), (8, 12));
    let symbol = |ledger| {
        Decode!(&system.query(&host, ledger, "icrc1_symbol", &Encode!().unwrap()).unwrap().unwrap(), String)
            .unwrap()
    };
    assert_eq!((symbol(ICP_LEDGER), symbol(CYCLES_LEDGER)), ("ICP".to_string(), "TCYCLES".to_string()));
}

#[test]
fn an_icrc1_transfer_moves_the_amount_and_burns_the_fee() {
    let mut system = SystemCanisters::new();
    let anonymous = Principal::anonymous();
    // icp-cli's funding after `icp network start`: the fee named.
    let sent = icrc1_transfer(
        &mut system,
        CYCLES_LEDGER,
        anonymous,
        user(1),
        1_000_000_000_000_000,
        Some(100_000_000),
    );
    assert_eq!(sent, Ok(Nat::from(1u8)), "block 1: block 0 is the genesis mint");
    assert_eq!(balance(&system, CYCLES_LEDGER, user(1)), 1_000_000_000_000_000);
    assert_eq!(
        icrc1_transfer(&mut system, ICP_LEDGER, anonymous, user(1), 500_000_000, None),
        Ok(Nat::from(1u8))
    );
    assert_eq!(
        icrc1_transfer(&mut system, ICP_LEDGER, user(1), user(2), 500_000_000, None),
        Err(TransferError::InsufficientFunds { balance: Nat::from(500_000_000u64) }),
        "the amount and the fee"
    );
    assert_eq!(
        icrc1_transfer(&mut system, ICP_LEDGER, user(1), user(2), 400_000_000, None),
        Ok(Nat::from(2u8))
    );
    assert_eq!(balance(&system, ICP_LEDGER, user(1)), 500_000_000 - 400_000_000 - ICP_LEDGER_FEE_E8S);
    assert_eq!(
        icrc1_transfer(&mut system, ICP_LEDGER, user(2), user(1), 1, Some(1)),
        Err(TransferError::BadFee { expected_fee: Nat::from(ICP_LEDGER_FEE_E8S) })
    );
}

#[derive(CandidType, serde::Deserialize, Debug, PartialEq, Eq)]
struct Balance {
    e8s: u64,
}

#[derive(CandidType, serde::Deserialize, Debug, PartialEq, Eq)]
enum LegacyTransferError {
    BadFee { expected_fee: Balance },
    InsufficientFunds { balance: Balance },
    TxTooOld { allowed_window_nanos: u64 },
    TxCreatedInFuture,
    TxDuplicate { duplicate_of: u64 },
}

fn legacy_transfer(
    system: &mut SystemCanisters,
    to: Vec<u8>,
    e8s: u64,
    fee: u64,
) -> Result<Result<u64, LegacyTransferError>, Reject> {
    let args = TransferArgs {
        memo: 0,
        amount: Tokens { e8s },
        fee: Tokens { e8s: fee },
        from_subaccount: None,
        to,
        created_at_time: None,
    };
    let answer = system
        .update(
            &mut FakeHost::default(),
            ICP_LEDGER,
            Principal::anonymous(),
            "transfer",
            &Encode!(&args).unwrap(),
        )
        .unwrap()?;
    Ok(Decode!(&answer, Result<u64, LegacyTransferError>).unwrap())
}

#[test]
fn the_legacy_transfer_and_account_balance_share_the_icrc1_book() {
    let mut system = SystemCanisters::new();
    let to = crate::ledger::account_identifier(&crate::ledger::Account::of(user(3))).to_vec();
    // icp-cli's funding after `icp network start`: 1,000,000 ICP.
    assert_eq!(legacy_transfer(&mut system, to.clone(), 100_000_000_000_000, 10_000), Ok(Ok(1)));
    assert_eq!(balance(&system, ICP_LEDGER, user(3)), 100_000_000_000_000);
    #[derive(CandidType)]
    struct AccountBalanceArgs {
        account: Vec<u8>,
    }
    let args = Encode!(&AccountBalanceArgs { account: to.clone() }).unwrap();
    let answer = system.query(&FakeHost::default(), ICP_LEDGER, "account_balance", &args);
    assert_eq!(Decode!(&answer.unwrap().unwrap(), Balance).unwrap().e8s, 100_000_000_000_000);
    assert_eq!(
        legacy_transfer(&mut system, to.clone(), 1, 1),
        Ok(Err(LegacyTransferError::BadFee { expected_fee: Balance { e8s: 10_000 } }))
    );
    // A mistyped account identifier would lose the funds: the ledger traps.
    let mut mistyped = to;
    mistyped[31] ^= 1;
    let refused = legacy_transfer(&mut system, mistyped, 1, 10_000).unwrap_err();
    assert!(refused.message.contains("checksum does not match"), "{}", refused.message);
}

#[derive(CandidType)]
struct CreateCanisterArgs {
    from_subaccount: Option<Vec<u8>>,
    created_at_time: Option<u64>,
    amount: Nat,
    creation_args: Option<()>,
}

fn create(system: &mut SystemCanisters, host: &mut FakeHost, caller: Principal, amount: u128) -> String {
    let args = CreateCanisterArgs {
        from_subaccount: None,
        created_at_time: None,
        amount: amount.into(),
        creation_args: None,
    };
    let answer = system.update(host, CYCLES_LEDGER, caller, "create_canister", &Encode!(&args).unwrap());
    let created = Decode!(&answer.unwrap().unwrap(), Result<CreateCanisterSuccess, CreateCanisterError>);
    format!("{:?}", created.unwrap())
}

#[test]
fn create_canister_charges_the_caller_and_refunds_what_it_could_not_create() {
    let mut system = SystemCanisters::new();
    let mut host = FakeHost::default();
    icrc1_transfer(&mut system, CYCLES_LEDGER, Principal::anonymous(), user(1), 3_000_000_000_000, None)
        .unwrap();
    let created = create(&mut system, &mut host, user(1), 2_000_000_000_000);
    assert!(created.contains("Ok") && created.contains("canister_id"), "{created}");
    assert_eq!(host.created[0].1, vec![user(1)], "the caller controls it");
    assert_eq!(host.created[0].2, 2_000_000_000_000);
    assert_eq!(balance(&system, CYCLES_LEDGER, user(1)), 1_000_000_000_000 - CYCLES_LEDGER_FEE);
    let refused = create(&mut system, &mut host, user(1), 2_000_000_000_000);
    assert!(refused.contains("InsufficientFunds") && refused.contains("999900000000"), "{refused}");
    host.refuse = true;
    let failed = create(&mut system, &mut host, user(1), 500_000_000_000);
    assert!(failed.contains("FailedToCreate") && failed.contains("the subnet is full"), "{failed}");
    assert_eq!(
        balance(&system, CYCLES_LEDGER, user(1)),
        1_000_000_000_000 - 2 * CYCLES_LEDGER_FEE,
        "refunded but the fee"
    );
}

#[test]
fn withdraw_tops_up_a_canister_or_refunds() {
    let mut system = SystemCanisters::new();
    let mut host = FakeHost::default();
    create(&mut system, &mut host, Principal::anonymous(), 1_000_000_000_000);
    let canister = host.created[0].0;
    let withdraw = |system: &mut SystemCanisters, host: &mut FakeHost, to| {
        let args = WithdrawArgs {
            amount: Nat::from(5_000_000_000u64),
            from_subaccount: None,
            to,
            created_at_time: None,
        };
        let answer =
            system.update(host, CYCLES_LEDGER, Principal::anonymous(), "withdraw", &Encode!(&args).unwrap());
        format!("{:?}", Decode!(&answer.unwrap().unwrap(), Result<Nat, WithdrawError>).unwrap())
    };
    let before = balance(&system, CYCLES_LEDGER, Principal::anonymous());
    assert!(withdraw(&mut system, &mut host, canister).contains("Ok"));
    assert_eq!(host.created[0].2, 1_005_000_000_000);
    assert_eq!(
        balance(&system, CYCLES_LEDGER, Principal::anonymous()),
        before - 5_000_000_000 - CYCLES_LEDGER_FEE
    );
    let missing = Principal::from_slice(&[99, 1, 1]);
    let failed = withdraw(&mut system, &mut host, missing);
    assert!(failed.contains("FailedToWithdraw") && failed.contains("not found"), "{failed}");
    assert_eq!(
        balance(&system, CYCLES_LEDGER, Principal::anonymous()),
        before - 5_000_000_000 - 2 * CYCLES_LEDGER_FEE,
        "refunded but the fee"
    );
    // A user is no receiver of cycles: refused before any fee.
    let refused = withdraw(&mut system, &mut host, user(9));
    assert!(refused.contains("InvalidReceiver"), "{refused}");
    assert_eq!(
        balance(&system, CYCLES_LEDGER, Principal::anonymous()),
        before - 5_000_000_000 - 2 * CYCLES_LEDGER_FEE
    );
}

#[test]
fn a_canisters_deposit_accepts_its_cycles_and_credits_them_less_the_fee() {
    let (mut system, mut host) = (SystemCanisters::new(), FakeHost::default());
    let (canister, owner) = (Principal::from_slice(&[7, 1, 1]), user(1));
    let mut deposit = |memo: Option<Vec<u8>>, cycles: u128| {
        #[derive(candid::CandidType)]
        struct DepositArgs {
            to: Account,
            memo: Option<Vec<u8>>,
        }
        let arg = Encode!(&DepositArgs { to: account(owner), memo }).unwrap();
        system.call_from_canister(&mut host, CYCLES_LEDGER, canister, "deposit", &arg, cycles).unwrap()
    };
    let (reply, accepted) = deposit(None, 5_000_000_000);
    let reply = Decode!(&reply.unwrap(), cycles_ledger::DepositResult).unwrap();
    assert_eq!((reply.balance, accepted), (Nat::from(4_900_000_000u64), 5_000_000_000));

    // What does not pay the fee, and a memo over 32 bytes, trap: nothing is
    // accepted, so the caller gets its cycles back.
    for (memo, cycles) in [(None, CYCLES_LEDGER_FEE), (Some(vec![0; 33]), 5_000_000_000)] {
        let (refused, accepted) = deposit(memo, cycles);
        assert_eq!((refused.unwrap_err().error_code, accepted), (ErrorCode::CanisterCalledTrap, 0));
    }
    assert_eq!(balance(&system, CYCLES_LEDGER, owner), 4_900_000_000);
    // Other calls from canisters accept no cycles.
    let arg = Encode!(&account(owner)).unwrap();
    let answer = system.call_from_canister(&mut host, CYCLES_LEDGER, canister, "icrc1_balance_of", &arg, 9);
    assert_eq!(answer.map(|(result, accepted)| (result.is_ok(), accepted)), Some((true, 0)));
}

#[test]
fn an_unknown_method_or_argument_is_refused_as_the_replica_refuses_it() {
    let mut system = SystemCanisters::new();
    let refused =
        system.update(&mut FakeHost::default(), CYCLES_LEDGER, user(1), "mint", &[]).unwrap().unwrap_err();
    assert_eq!(refused.error_code, ErrorCode::CanisterMethodNotFound);
    let refused = system
        .update(&mut FakeHost::default(), ICP_LEDGER, user(1), "icrc1_transfer", b"DIDL")
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.error_code, ErrorCode::CanisterCalledTrap);
    assert!(system.update(&mut FakeHost::default(), user(1), user(1), "icrc1_transfer", &[]).is_none());
    let subnets = system
        .query(&FakeHost::default(), CYCLES_MINTING_CANISTER, "get_default_subnets", &[])
        .unwrap()
        .unwrap();
    assert_eq!(Decode!(&subnets, Vec<Principal>).unwrap(), vec![subnet(1)]);
}

#[test]
fn create_canister_puts_it_on_the_subnet_asked_for() {
    #[derive(CandidType)]
    enum SubnetSelection {
        Subnet { subnet: Principal },
    }
    #[derive(CandidType)]
    struct CreationArgs {
        subnet_selection: Option<SubnetSelection>,
        settings: Option<()>,
    }
    #[derive(CandidType)]
    struct CreateOn {
        from_subaccount: Option<Vec<u8>>,
        created_at_time: Option<u64>,
        amount: Nat,
        creation_args: Option<CreationArgs>,
    }
    let mut system = SystemCanisters::new();
    let mut host = FakeHost::default();
    let mut create_on = |subnet| {
        let selection = Some(SubnetSelection::Subnet { subnet });
        let args = CreateOn {
            from_subaccount: None,
            created_at_time: None,
            amount: Nat::from(1_000_000_000_000u64),
            creation_args: Some(CreationArgs { subnet_selection: selection, settings: None }),
        };
        let answer = system.update(
            &mut host,
            CYCLES_LEDGER,
            Principal::anonymous(),
            "create_canister",
            &Encode!(&args).unwrap(),
        );
        format!(
            "{:?}",
            Decode!(&answer.unwrap().unwrap(), Result<CreateCanisterSuccess, CreateCanisterError>).unwrap()
        )
    };
    assert!(create_on(subnet(2)).contains("Ok"));
    let elsewhere = create_on(subnet(7));
    assert!(
        elsewhere.contains("FailedToCreate") && elsewhere.contains("not part of this network"),
        "{elsewhere}"
    );
    assert_eq!(host.subnets_used, vec![subnet(2)]);
}

/// `e8s` from `sender` (the anonymous principal, who has ICP, or someone
/// else, who has none) to the cycles minting canister's subaccount of
/// `sender` with `memo`; the block.
fn send_to_cmc(system: &mut SystemCanisters, sender: Principal, memo: u64, e8s: u64) -> u64 {
    let bytes = sender.as_slice();
    let mut subaccount = [0; 32];
    subaccount[0] = bytes.len() as u8;
    subaccount[1..=bytes.len()].copy_from_slice(bytes);
    let cmc_account = crate::ledger::Account { owner: CYCLES_MINTING_CANISTER, subaccount };
    let args = TransferArgs {
        memo,
        amount: Tokens { e8s },
        fee: Tokens { e8s: 10_000 },
        from_subaccount: None,
        to: crate::ledger::account_identifier(&cmc_account).to_vec(),
        created_at_time: None,
    };
    let answer =
        system.update(&mut FakeHost::default(), ICP_LEDGER, sender, "transfer", &Encode!(&args).unwrap());
    Decode!(&answer.unwrap().unwrap(), Result<u64, LegacyTransferError>).unwrap().unwrap()
}

#[test]
fn icp_sent_to_the_cmc_with_the_create_memo_pays_for_one_canister_or_comes_back() {
    #[derive(CandidType)]
    struct NotifyCreateArgs {
        block_index: u64,
        controller: Principal,
        subnet_selection: Option<()>,
        settings: Option<()>,
    }
    let mut system = SystemCanisters::new();
    let anonymous = Principal::anonymous();
    let mut host = FakeHost::default();
    let notify = |system: &mut SystemCanisters, host: &mut FakeHost, block_index| {
        let args =
            NotifyCreateArgs { block_index, controller: user(3), subnet_selection: None, settings: None };
        let arg = Encode!(&args).unwrap();
        let answer = system.update(host, CYCLES_MINTING_CANISTER, anonymous, "notify_create_canister", &arg);
        Decode!(&answer.unwrap().unwrap(), Result<Principal, cmc::NotifyError>).unwrap()
    };
    let icp = |system: &SystemCanisters| balance(system, ICP_LEDGER, anonymous);
    let block = send_to_cmc(&mut system, anonymous, MEMO_CREATE_CANISTER, 200_000_000);
    let canister = notify(&mut system, &mut host, block).unwrap();
    assert_eq!(notify(&mut system, &mut host, block), Ok(canister), "notified twice, created once");
    let cycles = 200_000_000 * u128::from(cmc::XDR_PERMYRIAD_PER_ICP);
    assert_eq!(host.created, [(canister, vec![user(3)], cycles)], "controlled by the controller named");
    assert_eq!(host.subnets_used, [subnet(1)], "the first subnet");

    // A creation that fails sends the ICP back, less the ledger's fee, once.
    let before = icp(&system);
    let block = send_to_cmc(&mut system, anonymous, MEMO_CREATE_CANISTER, 200_000_000);
    host.refuse = true;
    let refused = notify(&mut system, &mut host, block);
    let Err(cmc::NotifyError::Refunded { reason, block_index: Some(_) }) = &refused else {
        panic!("{refused:?}")
    };
    assert_eq!(reason, "the subnet is full");
    assert_eq!(icp(&system), before - 2 * ICP_LEDGER_FEE_E8S, "both transfers' fees paid");
    assert_eq!(notify(&mut system, &mut host, block), refused, "refunded once");
    // A block sent with the MINT memo buys no canister.
    let mint = send_to_cmc(&mut system, anonymous, MEMO_MINT_CYCLES, 200_000_000);
    assert!(matches!(notify(&mut system, &mut host, mint), Err(cmc::NotifyError::InvalidTransaction(_))));
}

#[test]
fn icp_sent_to_the_cmc_with_the_mint_memo_becomes_cycles_once() {
    #[derive(CandidType)]
    struct NotifyMintArgs {
        block_index: u64,
        deposit_memo: Option<Vec<u8>>,
        to_subaccount: Option<Vec<u8>>,
    }
    let mut system = SystemCanisters::new();
    let anonymous = Principal::anonymous();
    let send = |system: &mut SystemCanisters, memo: u64| send_to_cmc(system, anonymous, memo, 100_000_000);
    let notify = |system: &mut SystemCanisters, caller, block_index| {
        let args = NotifyMintArgs { block_index, deposit_memo: None, to_subaccount: None };
        let answer = system.update(
            &mut FakeHost::default(),
            CYCLES_MINTING_CANISTER,
            caller,
            "notify_mint_cycles",
            &Encode!(&args).unwrap(),
        );
        Decode!(&answer.unwrap().unwrap(), Result<cmc::NotifyMintOk, cmc::NotifyError>).unwrap()
    };
    let cycles_before = balance(&system, CYCLES_LEDGER, anonymous);
    let supply = |system: &SystemCanisters| {
        let answer =
            system.query(&FakeHost::default(), ICP_LEDGER, "icrc1_total_supply", &Encode!().unwrap());
        Decode!(&answer.unwrap().unwrap(), Nat).unwrap()
    };
    let minted_block = send(&mut system, MEMO_MINT_CYCLES);
    let supply_before = supply(&system);
    let minted = notify(&mut system, anonymous, minted_block).unwrap();
    let expected = 100_000_000 * u128::from(cmc::XDR_PERMYRIAD_PER_ICP);
    assert_eq!(
        format!("{minted:?}"),
        format!("{:?}", notify(&mut system, anonymous, minted_block).unwrap()),
        "notified twice, minted once"
    );
    assert_eq!(balance(&system, CYCLES_LEDGER, anonymous), cycles_before + expected - CYCLES_LEDGER_FEE);
    assert_eq!(supply(&system), supply_before - Nat::from(100_000_000u64), "the ICP is burned");
    let other_memo = send(&mut system, 7);
    assert!(matches!(
        notify(&mut system, anonymous, other_memo),
        Err(cmc::NotifyError::InvalidTransaction(_))
    ));
    let another_block = send(&mut system, MEMO_MINT_CYCLES);
    assert!(
        matches!(notify(&mut system, user(1), another_block), Err(cmc::NotifyError::InvalidTransaction(_))),
        "not the caller's subaccount"
    );
    let rate = system.query(
        &FakeHost::default(),
        CYCLES_MINTING_CANISTER,
        "get_icp_xdr_conversion_rate",
        &Encode!().unwrap(),
    );
    assert!(rate.unwrap().is_ok());
}

use super::icrc1::{
    Allowance, AllowanceArgs, ApproveArgs, ApproveError, TransferFromArgs, TransferFromError,
};

/// `caller`'s update call to `method` of `ledger` with `arg`: its decoded
/// reply, or the reject.
fn call<R: for<'de> serde::Deserialize<'de> + CandidType>(
    system: &mut SystemCanisters,
    ledger: Principal,
    caller: Principal,
    method: &str,
    arg: impl CandidType,
) -> Result<R, Reject> {
    let answer = system.update(&mut FakeHost::default(), ledger, caller, method, &Encode!(&arg).unwrap());
    Ok(Decode!(&answer.unwrap()?, R).unwrap())
}

fn approve(
    system: &mut SystemCanisters,
    ledger: Principal,
    from: Principal,
    spender: Principal,
    amount: u128,
) -> Result<Result<Nat, ApproveError>, Reject> {
    let args = ApproveArgs {
        from_subaccount: None,
        spender: account(spender),
        amount: amount.into(),
        expected_allowance: None,
        expires_at: Some(NOW + 1_000),
        fee: None,
        memo: None,
        created_at_time: None,
    };
    call(system, ledger, from, "icrc2_approve", args)
}

fn allowance(system: &SystemCanisters, ledger: Principal, from: Principal, spender: Principal) -> Allowance {
    let args = AllowanceArgs { account: account(from), spender: account(spender) };
    let answer = system.query(&FakeHost::default(), ledger, "icrc2_allowance", &Encode!(&args).unwrap());
    Decode!(&answer.unwrap().unwrap(), Allowance).unwrap()
}

fn transfer_from(
    system: &mut SystemCanisters,
    ledger: Principal,
    spender: Principal,
    from: Principal,
    amount: u128,
) -> Result<Nat, TransferFromError> {
    let args = TransferFromArgs {
        spender_subaccount: None,
        from: account(from),
        to: account(spender),
        amount: amount.into(),
        fee: None,
        memo: None,
        created_at_time: None,
    };
    call(system, ledger, spender, "icrc2_transfer_from", args).unwrap()
}

#[test]
fn both_ledgers_let_an_owner_approve_a_spender_who_then_spends() {
    for (ledger, fee) in [(ICP_LEDGER, ICP_LEDGER_FEE_E8S), (CYCLES_LEDGER, CYCLES_LEDGER_FEE)] {
        let mut system = SystemCanisters::new();
        icrc1_transfer(&mut system, ledger, Principal::anonymous(), user(1), 100 * fee, None).unwrap();
        assert_eq!(approve(&mut system, ledger, user(1), user(2), 50 * fee), Ok(Ok(Nat::from(2u8))));
        assert_eq!(balance(&system, ledger, user(1)), 99 * fee, "the owner pays the fee");
        let granted = allowance(&system, ledger, user(1), user(2));
        assert_eq!(granted, Allowance { allowance: Nat::from(50 * fee), expires_at: Some(NOW + 1_000) });
        assert_eq!(transfer_from(&mut system, ledger, user(2), user(1), 30 * fee), Ok(Nat::from(3u8)));
        assert_eq!(
            (balance(&system, ledger, user(1)), balance(&system, ledger, user(2))),
            (68 * fee, 30 * fee)
        );
        assert_eq!(allowance(&system, ledger, user(1), user(2)).allowance, Nat::from(19 * fee));
        assert_eq!(
            transfer_from(&mut system, ledger, user(2), user(1), 19 * fee),
            Err(TransferFromError::InsufficientAllowance { allowance: Nat::from(19 * fee) }),
            "the fee comes out of the allowance too"
        );
        assert_eq!(
            approve(&mut system, ledger, user(3), user(2), 1),
            Ok(Err(ApproveError::InsufficientFunds { balance: Nat::from(0u8) }))
        );
        let selfish = approve(&mut system, ledger, user(1), user(1), 1).unwrap_err();
        assert_eq!(selfish.error_code, ErrorCode::CanisterCalledTrap);
        assert!(selfish.message.contains("self approval"), "{}", selfish.message);
        let standards = system.query(&FakeHost::default(), ledger, "icrc1_supported_standards", &[]);
        #[derive(CandidType, serde::Deserialize)]
        struct Standard {
            name: String,
            url: String,
        }
        let standards = Decode!(&standards.unwrap().unwrap(), Vec<Standard>).unwrap();
        let names: Vec<_> = standards.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ICRC-1", "ICRC-2"]);
        assert!(standards.iter().all(|s| s.url.starts_with("https://github.com/dfinity/ICRC-1")));
    }
}

#[test]
fn the_icp_minting_account_approves_no_one() {
    let mut system = SystemCanisters::new();
    let refused = approve(&mut system, ICP_LEDGER, GOVERNANCE, user(2), 1).unwrap();
    assert!(
        matches!(&refused, Err(ApproveError::GenericError { message, .. }) if message.contains("minting account")),
        "{refused:?}"
    );
}

#[derive(CandidType)]
struct WithdrawArgs {
    amount: Nat,
    from_subaccount: Option<Vec<u8>>,
    to: Principal,
    created_at_time: Option<u64>,
}

#[test]
fn create_canister_and_withdraw_with_a_creation_time_run_once() {
    let mut system = SystemCanisters::new();
    let mut host = FakeHost::default();
    let anonymous = Principal::anonymous();
    let call = |system: &mut SystemCanisters, host: &mut FakeHost, method, arg: Vec<u8>| {
        let answer = system.update(host, CYCLES_LEDGER, anonymous, method, &arg).unwrap().unwrap();
        if method == "withdraw" {
            format!("{:?}", Decode!(&answer, Result<Nat, WithdrawError>).unwrap())
        } else {
            format!("{:?}", Decode!(&answer, Result<CreateCanisterSuccess, CreateCanisterError>).unwrap())
        }
    };
    let create_at = |created: u64| {
        let args = CreateCanisterArgs {
            from_subaccount: None,
            created_at_time: Some(created),
            amount: Nat::from(1_000_000_000_000u64),
            creation_args: None,
        };
        Encode!(&args).unwrap()
    };
    let before = balance(&system, CYCLES_LEDGER, anonymous);
    let created = call(&mut system, &mut host, "create_canister", create_at(NOW));
    let canister = host.created[0].0;
    assert!(created.contains("Ok") && created.contains("block_id: Nat(1)"), "{created}");
    let again = call(&mut system, &mut host, "create_canister", create_at(NOW));
    assert_eq!(again, format!("Err(Duplicate {{ duplicate_of: Nat(1), canister_id: Some({canister:?}) }})"));
    assert_eq!(host.created.len(), 1, "one canister");
    assert_eq!(balance(&system, CYCLES_LEDGER, anonymous), before - 1_000_000_000_000 - CYCLES_LEDGER_FEE);
    assert!(
        call(&mut system, &mut host, "create_canister", create_at(NOW - 1)).contains("Ok"),
        "another call"
    );
    let old = NOW - crate::ledger::TX_WINDOW_NS - crate::ledger::PERMITTED_DRIFT_NS - 1;
    assert_eq!(call(&mut system, &mut host, "create_canister", create_at(old)), "Err(TooOld)");

    let withdraw_at = |created: u64| {
        let args = WithdrawArgs {
            amount: Nat::from(5_000u64),
            from_subaccount: None,
            to: canister,
            created_at_time: Some(created),
        };
        Encode!(&args).unwrap()
    };
    assert_eq!(call(&mut system, &mut host, "withdraw", withdraw_at(NOW)), "Ok(Nat(3))");
    assert_eq!(
        call(&mut system, &mut host, "withdraw", withdraw_at(NOW)),
        "Err(Duplicate { duplicate_of: Nat(3) })"
    );
    assert_eq!(host.created[0].2, 1_000_000_005_000, "topped up once");
    let ahead = NOW + crate::ledger::PERMITTED_DRIFT_NS + 1;
    assert!(call(&mut system, &mut host, "withdraw", withdraw_at(ahead)).contains("CreatedInFuture"));
}

/// ICRC-1: only structurally equal transactions are duplicates, on both
/// ledgers' ICRC-1 endpoints: a transfer to `{ owner; subaccount = null }`
/// and one to `{ owner; subaccount = opt [0; 32] }` are two (DFINITY's
/// suite checks it: `icrc1:tx_deduplication`), and so are one that names
/// the fee and one that does not. The ICP ledger's legacy `transfer` is
/// deduplicated as the ICP ledger does it, by account identifier: there a
/// `from_subaccount` of `null` or of 32 zeros is one sender.
#[test]
fn transfers_are_deduplicated_as_sent_and_the_legacy_one_by_account_identifier() {
    for (ledger, fee) in [(ICP_LEDGER, ICP_LEDGER_FEE_E8S), (CYCLES_LEDGER, CYCLES_LEDGER_FEE)] {
        let mut system = SystemCanisters::new();
        icrc1_transfer(&mut system, ledger, Principal::anonymous(), user(1), 100 * fee, None).unwrap();
        let to = |subaccount: Option<Vec<u8>>, fee: Option<u128>| TransferArg {
            from_subaccount: None,
            to: Account { owner: user(2), subaccount },
            amount: 10u8.into(),
            fee: fee.map(Nat::from),
            memo: Some(vec![0]),
            created_at_time: Some(NOW),
        };
        let mut send = |arg: TransferArg| -> Result<Nat, TransferError> {
            call(&mut system, ledger, user(1), "icrc1_transfer", arg).unwrap()
        };
        let block = |n: u8| Ok(Nat::from(n));
        let duplicate = |n: u8| Err(TransferError::Duplicate { duplicate_of: Nat::from(n) });
        assert_eq!(send(to(None, None)), block(2));
        assert_eq!(send(to(Some(vec![0; 32]), None)), block(3), "{ledger}: not a duplicate");
        assert_eq!(send(to(None, Some(fee))), block(4), "{ledger}: not a duplicate either");
        assert_eq!(send(to(None, None)), duplicate(2), "{ledger}");
        assert_eq!(send(to(Some(vec![0; 32]), None)), duplicate(3), "{ledger}");
        assert_eq!(send(to(None, Some(fee))), duplicate(4), "{ledger}");
        assert_eq!(balance(&system, ledger, user(2)), 30);
    }
    let mut system = SystemCanisters::new();
    let to = crate::ledger::account_identifier(&crate::ledger::Account::of(user(2))).to_vec();
    let from = |from_subaccount| TransferArgs {
        memo: 7,
        amount: Tokens { e8s: 10 },
        fee: Tokens { e8s: 10_000 },
        from_subaccount,
        to: to.clone(),
        created_at_time: Some(TimeStamp { timestamp_nanos: NOW }),
    };
    let mut send = |arg: TransferArgs| -> Result<u64, LegacyTransferError> {
        call(&mut system, ICP_LEDGER, Principal::anonymous(), "transfer", arg).unwrap()
    };
    assert_eq!(send(from(None)), Ok(1));
    assert_eq!(send(from(Some(vec![0; 32]))), Err(LegacyTransferError::TxDuplicate { duplicate_of: 1 }));
    assert_eq!(
        send(from(Some(vec![1; 32]))),
        Err(LegacyTransferError::InsufficientFunds { balance: Balance { e8s: 0 } })
    );
}
