package logging

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"gopkg.in/natefinch/lumberjack.v2"
)

// ErrLevel is returned (wrapped, naming the level) by New when
// Options.Level is not a level zap knows.
var ErrLevel = errors.New("unknown log level")

// Defaults used by New for zero Options fields.
const (
	DefaultLevel     = "info"
	DefaultMaxSizeMB = 10
	DefaultMaxFiles  = 5
)

// Options configures New. The zero value logs JSON at info level to standard
// error.
type Options struct {
	// Level is one of debug, info, warn, error, dpanic, panic, fatal (any
	// case). Empty means "info".
	Level string
	// File is the path of the log file; empty means standard error. A
	// missing directory is created; the file is created with mode 0600 and
	// rotated by size (rotated copies get a timestamp in their name).
	File string
	// MaxSizeMB is the size in MiB at which the file is rotated. Zero means
	// DefaultMaxSizeMB. Ignored when File is empty.
	MaxSizeMB int
	// MaxFiles is how many rotated files are kept beside the current one;
	// older ones are deleted. Zero means DefaultMaxFiles (never "keep all").
	// Ignored when File is empty.
	MaxFiles int
	// Console selects zap's human-readable console encoder (for a person
	// running receiptd in the foreground); false selects JSON.
	Console bool
	// Atom, when not nil, is the logger's level: New sets it to Level,
	// and SetLevel changes it while the logger runs (log.level applied in
	// place). Nil: the level is fixed.
	Atom *zap.AtomicLevel
	// Lines, when not nil, is set by New to a writer that adds whole
	// lines to the logger's output, among its own entries: a child
	// receiptd's log, passed on by its parent (a Windows service's child
	// has no output of its own). A line is written once its newline has
	// arrived; one longer than 64 KiB is written in pieces.
	Lines *io.Writer
}

// New builds a logger from o. The returned function flushes and closes the
// output; call it once, after the last log line. It is safe to call more
// than once. A bad level is an error wrapping ErrLevel that names the level;
// a negative size or count is an error naming the option.
func New(o Options) (*zap.Logger, func() error, error) {
	level, err := parseLevel(o.Level)
	if err != nil {
		return nil, nil, err
	}
	if o.MaxSizeMB < 0 {
		return nil, nil, fmt.Errorf("logging: max_size_mb %d: must not be negative", o.MaxSizeMB)
	}
	if o.MaxFiles < 0 {
		return nil, nil, fmt.Errorf("logging: max_files %d: must not be negative", o.MaxFiles)
	}

	var (
		sink    zapcore.WriteSyncer
		closeFn func() error
	)
	if o.File == "" {
		sink = zapcore.Lock(os.Stderr)
		closeFn = func() error { return nil }
	} else {
		lj := &lumberjack.Logger{
			Filename:   o.File,
			MaxSize:    orDefault(o.MaxSizeMB, DefaultMaxSizeMB),
			MaxBackups: orDefault(o.MaxFiles, DefaultMaxFiles),
		}
		// Open the file now so a bad path is a start-up error, not a
		// silently lost first line.
		if _, err := lj.Write(nil); err != nil {
			return nil, nil, fmt.Errorf("logging: open %s: %w", o.File, err)
		}
		sink = zapcore.AddSync(lj)
		closeFn = lj.Close
	}

	var enabler zapcore.LevelEnabler = level
	if o.Atom != nil {
		o.Atom.SetLevel(level)
		enabler = o.Atom
	}
	if o.Lines != nil {
		*o.Lines = &lineWriter{sink: sink}
	}
	core := zapcore.NewCore(newEncoder(o.Console), sink, enabler)
	logger := zap.New(WrapCore(core), zap.AddCaller(), zap.AddStacktrace(zapcore.DPanicLevel))

	done := sync.OnceValue(func() error {
		syncErr := logger.Sync()
		if o.File == "" {
			// Sync on a terminal or pipe fails with EINVAL on some
			// systems; standard error is unbuffered anyway.
			syncErr = nil
		}
		if err := errors.Join(syncErr, closeFn()); err != nil {
			return fmt.Errorf("logging: close %s: %w", o.File, err)
		}
		return nil
	})
	return logger, done, nil
}

// SetLevel sets atom to level (as Options.Level: empty means "info"); a
// bad level is an error wrapping ErrLevel, and atom is left as it was.
func SetLevel(atom zap.AtomicLevel, level string) error {
	l, err := parseLevel(level)
	if err != nil {
		return err
	}
	atom.SetLevel(l)
	return nil
}

func parseLevel(s string) (zapcore.Level, error) {
	if strings.TrimSpace(s) == "" {
		s = DefaultLevel
	}
	level, err := zapcore.ParseLevel(strings.ToLower(strings.TrimSpace(s)))
	if err != nil {
		return 0, fmt.Errorf("logging: level %q: %w (want debug, info, warn or error)", s, ErrLevel)
	}
	return level, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func newEncoder(console bool) zapcore.Encoder {
	if console {
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.EncodeTime = zapcore.TimeEncoderOfLayout("2006-01-02 15:04:05.000")
		cfg.EncodeLevel = zapcore.CapitalLevelEncoder
		cfg.StacktraceKey = ""
		return zapcore.NewConsoleEncoder(cfg)
	}
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = utcRFC3339Nano
	cfg.EncodeDuration = zapcore.StringDurationEncoder
	return zapcore.NewJSONEncoder(cfg)
}

// utcRFC3339Nano writes times as the rest of receiptd writes them on disk:
// RFC 3339 with nanoseconds, UTC.
func utcRFC3339Nano(t time.Time, enc zapcore.PrimitiveArrayEncoder) {
	enc.AppendString(t.UTC().Format(time.RFC3339Nano))
}

// lineWriter writes whole lines to sink (Options.Lines): one Write of
// the sink per batch of complete lines, so they never interleave with
// the logger's own entries mid-line.
type lineWriter struct {
	mu      sync.Mutex
	sink    zapcore.WriteSyncer
	partial []byte
}

// maxPartial bounds a line kept waiting for its newline.
const maxPartial = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	end := bytes.LastIndexByte(w.partial, '\n') + 1
	if end == 0 && len(w.partial) >= maxPartial {
		end = len(w.partial)
	}
	if end == 0 {
		return len(p), nil
	}
	_, err := w.sink.Write(w.partial[:end])
	w.partial = append(w.partial[:0], w.partial[end:]...)
	return len(p), err
}
