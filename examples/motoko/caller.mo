// The caller of the parallel-calls example, in Motoko: `n` pings to the
// callee one after another, or all at once; each returns how many
// succeeded. All at once, a call that finds the 500-slot queue to the
// callee full fails at once, as in the Rust caller.
import Nat64 "mo:core/Nat64";
import Principal "mo:core/Principal";
import Runtime "mo:core/Runtime";
import VarArray "mo:core/VarArray";

persistent actor Caller {
  type Callee = actor { ping : () -> async () };

  var callee : ?Callee = null;

  public shared ({ caller }) func setup_callee(id : Principal) : async () {
    if (not Principal.isController(caller)) {
      Runtime.trap("only a controller may set the callee");
    };
    callee := ?(actor (Principal.toText(id)) : Callee);
  };

  func theCallee() : Callee {
    switch callee {
      case (?c) c;
      case null Runtime.trap("call setup_callee first");
    };
  };

  public func sequential_calls(n : Nat64) : async Nat64 {
    let c = theCallee();
    var succeeded : Nat64 = 0;
    var i : Nat64 = 0;
    while (i < n) {
      try {
        await c.ping();
        succeeded += 1;
      } catch (_) {};
      i += 1;
    };
    succeeded;
  };

  public func parallel_calls(n : Nat64) : async Nat64 {
    let c = theCallee();
    let calls = VarArray.repeat<?(async ())>(null, Nat64.toNat(n));
    var i = 0;
    while (i < calls.size()) {
      try { calls[i] := ?c.ping() } catch (_) {};
      i += 1;
    };
    var succeeded : Nat64 = 0;
    i := 0;
    while (i < calls.size()) {
      switch (calls[i]) {
        case (?call) {
          try {
            await call;
            succeeded += 1;
          } catch (_) {};
        };
        case null {};
      };
      i += 1;
    };
    succeeded;
  };
};
