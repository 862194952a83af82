// Package logging builds receiptd's zap logger and owns what may appear in a
// log line.
//
// It promises three things:
//   - the output is JSON (one object a line) to a size-rotated file, or to
//     standard error; or a human-readable console format in the foreground;
//   - customer identifiers (customerTin, consumerNo) are masked wherever they
//     appear as a field, inside an object or array field, or as a JSON /
//     key=value pair inside a string (the message, a string field, an error);
//   - the lottery number and the QR data (lottery, qrData) are redacted the
//     same way, so a careless log line cannot write them to disk.
//
// Masking is done by a zapcore.Core wrapper (WrapCore) that New installs on
// every logger it builds; other cores (a test observer, an event log core)
// can be wrapped with it too. Key names are matched without regard to case,
// '_' or '-', so customer_tin and QRDATA are caught as well.
//
// Options.Lines passes another process's log lines (a Windows service's
// child receiptd, which masks its own) into the same output, whole: the
// file stays one writer's, so it can be rotated on Windows.
//
// Limits, stated plainly: a secret that is logged under some other key and is
// not inside JSON or key=value text (say zap.String("x", lottery)) cannot be
// recognised; callers must not do that. Such values should never leave the
// sync package's in-memory hand-off in the first place.
package logging
