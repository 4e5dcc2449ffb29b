"""Logging channels (DESIGN §3): ``PTGO_LOGS=graph_code,guards`` or ``ptgo.set_logs(...)``.

Records go through Python's ``logging`` under the ``ptgo`` logger (``ptgo.<channel>``). A channel
that is off costs Go one branch: Go learns which channels are on from ``channels_json()``.
"""
import logging
import os
import sys

CHANNELS = {
    "graph_code": "the captured FX graph of every compiled frame, as code",
    "graph": "the captured graph in ptgo's IR text form",
    "graph_breaks": "why capture stopped, with the user's file:line and what to change",
    "guards": "the guards installed for every compiled frame",
    "recompiles": "which guard failed when a frame is compiled again",
    "bytecode": "original and transformed bytecode of every compiled frame",
    "aot_graphs": "forward and backward graphs from ptgo's autograd",
    "output_code": "generated kernel source code",
    "fusion": "fusion decisions, with the reason when refused",
    "perf_hints": "ops that ran through a fallback, and other speed hints",
    "compile_times": "time spent per compile stage",
    "dynamo": "capture (info level; +dynamo for debug detail)",
    "inductor": "code generation (info level; +inductor for debug detail)",
    "dynamic": "which dimension became dynamic (symbolic) and why, and what was specialised",
}

_enabled = {}  # channel -> logging level
_handler = None
log = logging.getLogger("ptgo")


def _parse(spec):
    out = {}
    for raw in spec.replace(" ", "").split(","):
        if not raw:
            continue
        level = logging.INFO
        name = raw
        if raw[0] in "+-":
            level = logging.DEBUG if raw[0] == "+" else logging.WARNING
            name = raw[1:]
        if name == "help":
            print(help_text(), file=sys.stderr)
            continue
        if name == "all":
            for ch in CHANNELS:
                out[ch] = level
            continue
        if name not in CHANNELS:
            raise ValueError(
                "ptgo: unknown log channel %r in PTGO_LOGS; known channels: %s (PTGO_LOGS=help lists them)"
                % (name, ", ".join(sorted(CHANNELS)))
            )
        out[name] = level
    return out


def help_text():
    lines = ["ptgo log channels (PTGO_LOGS=a,b or ptgo.set_logs('a,b'); +name for debug level):"]
    for ch, what in CHANNELS.items():
        lines.append("  %-14s %s" % (ch, what))
    return "\n".join(lines)


class _Formatter(logging.Formatter):
    def format(self, record):
        channel = getattr(record, "channel", None) or record.name.rpartition(".")[2]
        return "[ptgo:%s] %s" % (channel, record.getMessage())


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at emit time (so pytest's capture and redirects work)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def _install_handler():
    global _handler
    if _handler is None and _enabled:
        _handler = _StderrHandler()
        _handler.setFormatter(_Formatter())
        log.addHandler(_handler)
        log.propagate = False
    if log.level == logging.NOTSET or log.level > logging.DEBUG:
        log.setLevel(logging.DEBUG)


def set_logs(spec=None, **channels):
    """Turn channels on: ``set_logs("graph_code,guards")`` or ``set_logs(guards=True)``.

    ``set_logs()`` with no arguments turns every channel off.
    """
    _enabled.clear()
    if spec:
        _enabled.update(_parse(spec))
    for name, on in channels.items():
        if name not in CHANNELS:
            raise ValueError("ptgo: unknown log channel %r; known: %s" % (name, ", ".join(sorted(CHANNELS))))
        if on:
            _enabled[name] = logging.DEBUG if on == "debug" else logging.INFO
    _install_handler()
    from . import _runtime

    _runtime.push_log_config()


def enabled(channel):
    return channel in _enabled


def channels_json():
    return {ch: ("debug" if lvl <= logging.DEBUG else "info") for ch, lvl in _enabled.items()}


def emit(channel, message, debug=False):
    if channel not in _enabled:
        return
    level = logging.DEBUG if debug else logging.INFO
    if level < _enabled[channel] and not debug:
        return
    logging.getLogger("ptgo." + channel).log(level, message, extra={"channel": channel})


def _from_env():
    spec = os.environ.get("PTGO_LOGS")
    if spec:
        _enabled.update(_parse(spec))
        _install_handler()


_from_env()
