// Package sharedposapi holds the end-to-end test of many tills on one
// PosAPI (tests only): 20 real receiptd processes, built and run by the
// harness, in front of one simulator that other POS software also spends
// from. It promises that the test, opt-in with RECEIPTD_SHARED_POSAPI=1
// (its own CI step), shows what docs/contract.md's "PosAPI's own limits"
// says of a shared PosAPI: one low reserve gives at most 2 sendData calls
// from the 20 tills, a reserve the others empty in about 2 minutes is
// refilled before it is empty with check_every left at 10m, no B2C receipt
// of any till is refused for an empty reserve, and every till says
// `shared: true`.
package sharedposapi
