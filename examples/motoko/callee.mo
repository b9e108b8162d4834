// The callee of the parallel-calls example, in Motoko: `ping` counts.
persistent actor Callee {
  var pings : Nat64 = 0;

  public func ping() : async () {
    pings += 1;
  };

  public query func pings_received() : async Nat64 {
    pings;
  };
};
