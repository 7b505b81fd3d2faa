package main

import (
	"log/slog"

	"github.com/coreos/go-systemd/v22/daemon"
)

// notifier tells systemd, when it runs the server as a Type=notify
// service (docs/adlink.service), where the server is: serving, reloading
// or stopping. Where NOTIFY_SOCKET is unset it sends nothing.
type notifier struct {
	on  bool
	log *slog.Logger
}

// newNotifier reads NOTIFY_SOCKET through getenv; the messages go to the
// socket the process's environment names, which is the same in main.
func newNotifier(getenv func(string) string, log *slog.Logger) notifier {
	return notifier{on: getenv("NOTIFY_SOCKET") != "", log: log}
}

// ready says the server serves: after the first catalog, the migrations
// and the listeners, and again after each refresh that reloading began.
func (n notifier) ready() { n.send(daemon.SdNotifyReady) }

// reloading says a refresh began. systemd wants the moment with it, to
// tell this refresh's READY=1 from an earlier one.
func (n notifier) reloading() {
	n.send(daemon.SdNotifyReloading + "\n" + daemon.SdNotifyMonotonicUsec())
}

// stopping says a graceful stop began.
func (n notifier) stopping() { n.send(daemon.SdNotifyStopping) }

func (n notifier) send(state string) {
	if !n.on {
		return
	}
	// A lost message costs systemd's view of the state, never a request:
	// it is logged, not returned.
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.log.Warn("systemd notify", "state", state, "err", err)
	}
}
