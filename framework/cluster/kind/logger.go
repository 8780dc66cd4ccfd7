package kind

import (
	"fmt"

	"github.com/go-logr/logr"
	kindlog "sigs.k8s.io/kind/pkg/log"
)

// kindLogger adapts a logr.Logger to kind's logger: warnings and errors at V(0), kind's V(n) at V(n+1).
type kindLogger struct{ l logr.Logger }

var _ kindlog.Logger = kindLogger{}

func (k kindLogger) Warn(msg string)                   { k.l.Info("warning: " + msg) }
func (k kindLogger) Warnf(f string, a ...interface{})  { k.Warn(fmt.Sprintf(f, a...)) }
func (k kindLogger) Error(msg string)                  { k.l.Info("error: " + msg) }
func (k kindLogger) Errorf(f string, a ...interface{}) { k.Error(fmt.Sprintf(f, a...)) }
func (k kindLogger) V(level kindlog.Level) kindlog.InfoLogger {
	return kindInfo{k.l.V(int(level) + 1)}
}

type kindInfo struct{ l logr.Logger }

func (k kindInfo) Info(msg string)                  { k.l.Info(msg) }
func (k kindInfo) Infof(f string, a ...interface{}) { k.l.Info(fmt.Sprintf(f, a...)) }
func (k kindInfo) Enabled() bool                    { return k.l.Enabled() }
