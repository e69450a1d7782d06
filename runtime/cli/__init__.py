"""The ``ontoflow`` command: a composition root (it may import ``actors``).

One module per verb group, joined in ``_main`` (``COMMAND_GROUPS``); what they share (exit
codes, error reporting, output, a run's progress, the input flags) is in ``_shared`` (the
flags added as the parser is built in ``_options``, the ``--input`` pairs read in ``_inputs``);
the configuration file in ``_config``; every file a user names is read by
``runtime.documents.read_bounded``.

    _local.py       run, worker
    _plans.py       plan run, pipeline check|compile|run
    _in_process.py  a run on a local cluster (run, plan run, pipeline run): progress, stop
    _signals.py     SIGINT and SIGTERM of the verbs that run in this process
    _daemon.py      daemon
    _bounds.py      the range of every number of daemon and worker, flag and config key alike
    _runs.py        submit, status, cancel, watch
    _queries.py     runs, show, workers
    _keys.py        keys generate
    _completion.py  completion bash|zsh
    _entry.py       main, light to import (a Ctrl-C during the imports ends quietly)
    errors.py       NoAnswerError
    _client.py      the client socket (open_client, request, reach), the connection flags,
                    waiting on a run across daemon restarts
    _one_shot.py    a verb's one request and its reply (converse, ask), asked again when refused
                    as transient
    _backoff.py     the bounded, jittered waits before asking again after ``unavailable``
    _asking.py      ask and chat: a run's questions answered in the terminal, the time budget
    _domains.py     where ask, chat and intents eval find their domains, and loading them
    _intents_eval.py  intents eval
"""

from typing import TYPE_CHECKING, Any

from ontoflow.runtime.cli._entry import main

if TYPE_CHECKING:
    from ontoflow.runtime.cli._client import curve_client, open_client, request
    from ontoflow.runtime.cli._local import load_manifest
    from ontoflow.runtime.cli._main import COMMAND_GROUPS, build_parser
    from ontoflow.runtime.cli._shared import (
        BUILTIN_CAPABILITIES,
        EXIT_BROKEN_PIPE,
        EXIT_CANNOT_START,
        EXIT_FAILED,
        EXIT_INTERRUPTED,
        EXIT_INVALID,
        EXIT_JOURNAL,
        EXIT_NOT_FOUND,
        EXIT_OK,
        EXIT_TIMEOUT,
        capability_specs,
        common_options,
        fail,
        first_error,
        logging_options,
        print_result,
        write_json,
    )
    from ontoflow.runtime.cli.errors import NoAnswerError

# Imported on first use (PEP 562): the console script imports ``main`` from here, and these
# modules' imports, eager, were a window in which Ctrl-C printed a traceback (``_entry``).
_WHERE = {
    **dict.fromkeys(("curve_client", "open_client", "request"), "_client"),
    "load_manifest": "_local",
    **dict.fromkeys(("COMMAND_GROUPS", "build_parser"), "_main"),
    "NoAnswerError": "errors",
    **dict.fromkeys(("BUILTIN_CAPABILITIES", "EXIT_BROKEN_PIPE", "EXIT_CANNOT_START", "EXIT_FAILED",
                     "EXIT_INTERRUPTED", "EXIT_INVALID", "EXIT_JOURNAL", "EXIT_NOT_FOUND", "EXIT_OK",
                     "EXIT_TIMEOUT", "capability_specs", "common_options", "fail", "first_error",
                     "logging_options", "print_result", "write_json"), "_shared"),
}


def __getattr__(name: str) -> Any:
    """A name of :data:`__all__`, imported (and kept) at its first use.

    Raises:
        AttributeError: for a name the package does not export.
    """
    if name not in _WHERE:
        raise AttributeError(f"module 'ontoflow.runtime.cli' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"ontoflow.runtime.cli.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "BUILTIN_CAPABILITIES",
    "COMMAND_GROUPS",
    "EXIT_BROKEN_PIPE",
    "EXIT_CANNOT_START",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_JOURNAL",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "NoAnswerError",
    "build_parser",
    "capability_specs",
    "common_options",
    "curve_client",
    "fail",
    "first_error",
    "load_manifest",
    "logging_options",
    "main",
    "open_client",
    "print_result",
    "request",
    "write_json",
]
