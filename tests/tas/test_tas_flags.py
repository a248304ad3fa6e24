"""Intel TAS's command-line flags become this project's, each with a notice.

Covered:
- every flag of TAS's `cmd/main.go` (`--kubeConfig`, `--port`, `--cert`, `--key`, `--cacert`,
  `--syncPeriod`, and the older `--unsafe`) and of klog (`--v` and the log-file flags), for
  the extender and for the controller: the new argument, or the reason it is ignored;
- Go's `flag` grammar: `-flag` and `--flag`, `=value` and a separate value (taken whatever it
  looks like), boolean flags with and without Go's boolean spellings, `--` ending the flags,
  case-sensitive names (`--kubeconfig` is ours and passes untouched);
- `--unsafe` drops the TLS files, as TAS ignored them; `--metrics custom-metrics` (TAS's only
  source) is added when a TAS command line names none, before a `--`;
- TAS's `--cacert` default (the cluster CA) is added when a TAS command line serves TLS without
  one, so client certificates stay required; never for plain HTTP, the controller, a given
  `--cacert` or a command line of this project's own flags;
- what TAS would also refuse is a `TasFlagError`: a missing value, a port, duration, level or
  boolean that is not one, a TAS flag next to the new flag replacing it;
- a command line without TAS flags comes back unchanged (a property), and TAS's own shipped
  command line, translated, parses with the components' real argument parsers.
"""

from __future__ import annotations

import argparse
import importlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tas.tas_flags import TasFlagError, translate_tas_flags

CUSTOM_METRICS = "--metrics=custom-metrics"
PROMETHEUS = ["--metrics", "prometheus:http://prometheus:9090"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["--port=9001"], ["--listen=0.0.0.0:9001"], id="port with equals"),
        pytest.param(["--port", "9002"], ["--listen=0.0.0.0:9002"], id="port, separate value"),
        pytest.param(["-port", "9003"], ["--listen=0.0.0.0:9003"], id="port, single dash"),
        pytest.param(["-port=0"], ["--listen=0.0.0.0:0"], id="port zero, single dash"),
        pytest.param(["--syncPeriod=2s"], ["--sync-period=2s"], id="sync period"),
        pytest.param(["-syncPeriod", "1m30s"], ["--sync-period=1m30s"], id="Go compound"),
        pytest.param(["--kubeConfig", "/root/.kube/config"], ["--kubeconfig=/root/.kube/config"]),
        pytest.param(["--v=2"], ["--log-level=info"], id="TAS's shipped verbosity"),
        pytest.param(["-v", "0"], ["--log-level=info"], id="verbosity 0"),
        pytest.param(["--v", "3"], ["--log-level=info"], id="verbosity 3"),
        pytest.param(["--v=4"], ["--log-level=debug"], id="verbosity 4 is debug"),
        pytest.param(["-v=10"], ["--log-level=debug"], id="verbosity 10"),
        pytest.param(["--unsafe"], ["--insecure-http"], id="unsafe"),
        pytest.param(["-unsafe=true"], ["--insecure-http"], id="unsafe=true"),
        pytest.param(["--unsafe=1"], ["--insecure-http"], id="unsafe=1"),
        pytest.param(["--unsafe=T"], ["--insecure-http"], id="unsafe=T"),
        pytest.param(["--unsafe=false"], [], id="unsafe=false is the default"),
        pytest.param(["--unsafe=0"], [], id="unsafe=0"),
        pytest.param(
            ["-cert", "/c.crt", "--cacert=/ca"], ["--cert=/c.crt", "--cacert=/ca"], id="-cert"
        ),
        pytest.param(
            ["-key=/k.key", "--cacert=/ca"], ["--key=/k.key", "--cacert=/ca"], id="-key=FILE"
        ),
        pytest.param(["-cacert", "/ca.crt"], ["--cacert=/ca.crt"], id="single-dash cacert"),
        pytest.param(["--logtostderr"], [], id="klog logtostderr"),
        pytest.param(["--logtostderr=false"], [], id="klog logtostderr=false"),
        pytest.param(["--alsologtostderr"], [], id="klog alsologtostderr"),
        pytest.param(["--log_dir", "/var/log"], [], id="klog log_dir takes its value"),
        pytest.param(["--log_file=/x.log"], [], id="klog log_file"),
        pytest.param(["--log_file_max_size", "100"], [], id="klog log_file_max_size"),
        pytest.param(["--stderrthreshold", "INFO"], [], id="klog stderrthreshold"),
        pytest.param(["--vmodule=foo=3"], [], id="klog vmodule"),
        pytest.param(["--log_backtrace_at", "x.go:1"], [], id="klog log_backtrace_at"),
        pytest.param(["--add_dir_header"], [], id="klog add_dir_header"),
        pytest.param(["--skip_headers"], [], id="klog skip_headers"),
        pytest.param(["--skip_log_headers=true"], [], id="klog skip_log_headers"),
        pytest.param(["--one_output"], [], id="klog one_output"),
    ],
)
def test_each_tas_flag_becomes_its_new_extender_flag(argv: list[str], expected: list[str]) -> None:
    translated, notices = translate_tas_flags([*argv, *PROMETHEUS], component="extender")
    assert translated == [*expected, *PROMETHEUS]
    assert len(notices) == 1
    assert argv[0].split("=")[0] in notices[0]


@pytest.mark.parametrize(
    ("argv", "expected", "reason"),
    [
        pytest.param(["--kubeConfig=/k"], ["--kubeconfig=/k"], "use --kubeconfig", id="kube"),
        pytest.param(["--syncPeriod", "5s"], ["--sync-period=5s"], "--sync-period 5s", id="sync"),
        pytest.param(["--v=5"], ["--log-level=debug"], "--log-level debug", id="verbosity"),
        pytest.param(["--port=9001"], [], "controller's probes", id="port: extender only"),
        pytest.param(["--cert", "/c"], [], "TLS is the extender's", id="cert: extender only"),
        pytest.param(["-key=/k"], [], "TLS is the extender's", id="key: extender only"),
        pytest.param(["--cacert", "/ca"], [], "TLS is the extender's", id="cacert"),
        pytest.param(["--unsafe"], [], "extender's choice", id="unsafe: extender only"),
        pytest.param(["--logtostderr"], [], "standard error", id="klog"),
    ],
)
def test_each_tas_flag_becomes_its_new_controller_flag_or_is_ignored_with_a_reason(
    argv: list[str], expected: list[str], reason: str
) -> None:
    translated, notices = translate_tas_flags([*PROMETHEUS, *argv], component="controller")
    assert translated == [*PROMETHEUS, *expected]
    (notice,) = notices
    assert reason in notice


def test_tas_s_shipped_command_line_becomes_an_extender_command_line() -> None:
    # The container command of TAS's deploy/tas-deployment.yaml, without the binary.
    tas = [
        "--syncPeriod=2s",
        "--cert=/tas/cert/tls.crt",
        "--key=/tas/cert/tls.key",
        "--cacert=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "--v=2",
    ]
    translated, notices = translate_tas_flags(tas, component="extender")
    assert translated == [
        "--sync-period=2s",
        "--cert=/tas/cert/tls.crt",
        "--key=/tas/cert/tls.key",
        "--cacert=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "--log-level=info",
        CUSTOM_METRICS,
    ]
    assert notices == [
        "TAS flag --syncPeriod=2s is deprecated: use --sync-period 2s",
        "TAS flag --v=2 is deprecated: use --log-level info (klog verbosity 4 and above is "
        "debug, below it info)",
        "TAS read node metrics from the custom metrics API: --metrics custom-metrics added "
        "(give --metrics prometheus:URL to read Prometheus directly)",
    ]


def test_unsafe_with_the_issue_s_spelling_gives_one_notice_per_flag() -> None:
    translated, notices = translate_tas_flags(
        ["--unsafe", "--port=9001", "--syncPeriod=2s", *PROMETHEUS], component="extender"
    )
    assert translated == [
        "--insecure-http",
        "--listen=0.0.0.0:9001",
        "--sync-period=2s",
        *PROMETHEUS,
    ]
    assert [n.split(" is ")[0] for n in notices] == [
        "TAS flag --unsafe",
        "TAS flag --port=9001",
        "TAS flag --syncPeriod=2s",
    ]


def test_unsafe_drops_the_tls_files_as_tas_ignored_them() -> None:
    argv = ["--cert", "/c", "-key=/k", "--cacert=/ca", "-unsafe", *PROMETHEUS]
    translated, notices = translate_tas_flags(argv, component="extender")
    assert translated == ["--insecure-http", *PROMETHEUS]
    assert sum("so TAS ignored it too" in n for n in notices) == 3


def test_double_dash_tls_flags_are_this_projects_own_and_need_no_notice() -> None:
    argv = ["--cert=/c", "--key", "/k", "--cacert", "/ca", "--insecure-http", *PROMETHEUS]
    translated, notices = translate_tas_flags(argv, component="extender")
    assert translated == argv
    assert notices == []


def test_new_flags_and_positionals_pass_through_in_order_around_tas_flags() -> None:
    argv = ["--policies", "/p", "--v", "4", "--listen-extra", "x", "--syncPeriod", "1s", "--x=1"]
    translated, _ = translate_tas_flags(argv, component="extender")
    assert translated == [
        "--policies",
        "/p",
        "--log-level=debug",
        "--listen-extra",
        "x",
        "--sync-period=1s",
        "--x=1",
        CUSTOM_METRICS,
    ]


def test_a_value_flag_takes_the_next_argument_whatever_it_looks_like_as_go_does() -> None:
    translated, _ = translate_tas_flags(["--kubeConfig", "-odd", *PROMETHEUS], component="extender")
    assert translated == ["--kubeconfig=-odd", *PROMETHEUS]


def test_a_boolean_flag_never_takes_the_next_argument() -> None:
    translated, _ = translate_tas_flags(["--unsafe", "false", *PROMETHEUS], component="extender")
    assert translated == ["--insecure-http", "false", *PROMETHEUS]


def test_nothing_after_a_double_dash_is_translated() -> None:
    argv = ["--v=4", "--", "--port=1", "--syncPeriod=2s"]
    translated, notices = translate_tas_flags(argv, component="extender")
    # TAS's defaults go before the `--`, where they are still flags.
    assert translated == ["--log-level=debug", CUSTOM_METRICS, "--", "--port=1", "--syncPeriod=2s"]
    assert len(notices) == 2  # --v, and the metric source


def test_names_are_case_sensitive_as_in_go() -> None:
    argv = ["--kubeconfig", "/k", "--Port=1", "--SyncPeriod=2s", "--V=4", *PROMETHEUS]
    assert translate_tas_flags(argv, component="controller") == (argv, [])


def test_a_flag_given_twice_is_translated_twice_and_noted_once() -> None:
    argv = ["--logtostderr", "--logtostderr", *PROMETHEUS]
    translated, notices = translate_tas_flags(argv, component="extender")
    assert translated == PROMETHEUS
    assert len(notices) == 1


def test_the_metric_source_is_added_only_when_a_tas_command_line_names_none() -> None:
    with_source, _ = translate_tas_flags(["--v=2", "--metrics=textfile:/m"], component="extender")
    assert with_source == ["--log-level=info", "--metrics=textfile:/m"]
    ours, notices = translate_tas_flags(["--insecure-http"], component="extender")
    assert (ours, notices) == (["--insecure-http"], [])


TAS_CACERT = "--cacert=/etc/kubernetes/pki/ca.crt"


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--syncPeriod=2s", "--cert=/c", "--key=/k", "--v=2"], id="TAS's, no cacert"),
        pytest.param(["-cert", "/c", "-key", "/k"], id="single dashes"),
        pytest.param(["--port=9001", "--cert", "/c", "--key", "/k"], id="our TLS flags, TAS port"),
        pytest.param(["--unsafe=false", "--cert=/c", "--key=/k"], id="unsafe=false is HTTPS"),
    ],
)
def test_a_tas_command_line_serving_tls_without_cacert_keeps_tas_s_client_ca(
    argv: list[str],
) -> None:
    # TAS's --cacert defaulted to the cluster CA and its server always required client
    # certificates: without this, the same command line would serve TLS to anyone.
    translated, notices = translate_tas_flags([*argv, *PROMETHEUS], component="extender")
    assert translated.count(TAS_CACERT) == 1
    (notice,) = [n for n in notices if "--cacert" in n]
    assert "TAS required client certificates" in notice
    assert "give --cacert FILE" in notice


@pytest.mark.parametrize(
    ("component", "argv"),
    [
        pytest.param("extender", ["--cert=/c", "--key=/k"], id="our own command line"),
        pytest.param("extender", ["--v=2", "-cert=/c", "-key=/k", "-cacert=/ca"], id="given"),
        pytest.param("extender", ["--v=2", "--cert=/c", "--key=/k", "--cacert", "/ca"], id="ours"),
        pytest.param("extender", ["--unsafe", "--cert=/c", "--key=/k"], id="unsafe: plain HTTP"),
        pytest.param("extender", ["--v=2", "--insecure-http"], id="insecure-http"),
        pytest.param("extender", ["--v=2", "--syncPeriod=1s"], id="no certificate at all"),
        pytest.param("controller", ["--v=2", "--cert=/c", "--key=/k"], id="controller"),
    ],
)
def test_tas_s_client_ca_is_added_only_where_tas_would_have_required_client_certificates(
    component: str, argv: list[str]
) -> None:
    translated, notices = translate_tas_flags([*argv, *PROMETHEUS], component=component)  # type: ignore[arg-type]
    assert TAS_CACERT not in translated
    assert not any("TAS required client certificates" in n for n in notices)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--port"], "flag needs an argument: --port", id="port without value"),
        pytest.param(["-syncPeriod"], "flag needs an argument: -syncPeriod", id="no duration"),
        pytest.param(["--v"], "flag needs an argument: --v", id="v without value"),
        pytest.param(["--port=http"], "not a port number", id="port name"),
        pytest.param(["--port", "70000"], "not a port number", id="port too large"),
        pytest.param(["--port=-1"], "not a port number", id="negative port"),
        pytest.param(["--syncPeriod=soon"], "not a duration", id="bad duration"),
        pytest.param(["--syncPeriod=-2s"], "must not be negative", id="negative duration"),
        pytest.param(["--v=high"], "not a klog verbosity", id="bad verbosity"),
        pytest.param(["--unsafe=yes"], "invalid boolean value", id="bad boolean"),
        pytest.param(["--port=9001", "--listen", "0.0.0.0:1"], "keep --listen", id="both ports"),
        pytest.param(["--syncPeriod=2s", "--sync-period=3s"], "keep --sync-period", id="both"),
        pytest.param(["--v=2", "--log-level", "debug"], "keep --log-level", id="both levels"),
        pytest.param(["--kubeConfig=/a", "--kubeconfig=/b"], "keep --kubeconfig", id="both kc"),
    ],
)
def test_what_tas_would_refuse_is_an_error(argv: list[str], message: str) -> None:
    with pytest.raises(TasFlagError, match=message):
        translate_tas_flags(argv, component="extender")


_OUR_TOKENS = st.sampled_from(
    [
        "--metrics",
        "prometheus:http://p:9090",
        "--listen",
        "0.0.0.0:9001",
        "--insecure-http",
        "--cert",
        "--key",
        "--cacert",
        "/etc/tas/tls/tls.crt",
        "--sync-period",
        "2s",
        "--log-level",
        "debug",
        "--kubeconfig",
        "--policies",
        "/policies",
        "-h",
        "--",
        "x",
        "-5",
    ]
)


@given(
    argv=st.lists(_OUR_TOKENS, max_size=12), component=st.sampled_from(["extender", "controller"])
)
def test_a_command_line_without_tas_flags_comes_back_unchanged(
    argv: list[str], component: str
) -> None:
    if component == "controller":  # the TLS flags are the extender's only
        argv = [t for t in argv if t not in ("--cert", "--key", "--cacert")]
    assert translate_tas_flags(argv, component=component) == (argv, [])  # type: ignore[arg-type]


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = importlib.import_module("tas_cli.main").build_parser()
    return parser


@pytest.mark.parametrize(
    ("component", "argv"),
    [
        pytest.param(
            "extender",
            ["--unsafe", "--port=9001", "--syncPeriod=2s", "--v=2", "--kubeConfig", "/k"],
            id="extender, unsafe",
        ),
        pytest.param(
            "extender",
            ["-syncPeriod", "2s", "-cert", "/c", "-key", "/k", "-cacert", "/ca", "-v", "4"],
            id="extender, mTLS, single dashes",
        ),
        pytest.param(
            "controller",
            ["--kubeConfig=/k", "--syncPeriod=5s", "--v=2", "--port=9001", "--logtostderr"],
            id="controller",
        ),
    ],
)
def test_translated_tas_command_lines_parse_with_the_real_parsers(
    component: str, argv: list[str]
) -> None:
    translated, _ = translate_tas_flags(argv, component=component)  # type: ignore[arg-type]
    args = _parser().parse_args([component, *translated])
    assert args.metrics == "custom-metrics"
    assert args.sync_period > 0
    assert args.log_level in ("info", "debug")
    if "--unsafe" in argv:
        assert args.insecure_http is True
        assert "9001" in str(args.listen)  # HOST:PORT text or a parsed (host, port)
    if "-cert" in argv:
        assert (str(args.cert), str(args.key), str(args.cacert)) == ("/c", "/k", "/ca")
