"""Start a process as a terminal would, whoever started the test run."""

from __future__ import annotations

import signal


def with_terminal_signals() -> None:
    """A `preexec_fn`: SIGINT and SIGQUIT at their default in the child.

    A shell starts a background job (`make test &`, a CI runner's script) with both
    ignored, and its children inherit that. A server started so takes Ctrl-C only while
    uvicorn's own handler is installed, and uvicorn's re-raise of it afterwards is then
    ignored: it exits 0 instead of by SIGINT. Tests of Ctrl-C start their process as from
    a terminal, so they test the same thing however the suite was launched.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
