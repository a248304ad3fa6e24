# shellcheck shell=bash
# Sourced, not run: the command line as our shell scripts read it (scripts/gen-certs.sh,
# deploy/health-metric-demo/set-health.sh), so that each script states only its own options.
#
# Before sourcing it, a script sets
#   prog          the name its error messages start with
#   usage_lines   the last line of its header comment, which is its usage text
# and defines
#   take_option OPTION [VALUE...]
#                 store one option and set `taken` to how many arguments it used (1 for a
#                 flag, 2 for an option with its value; the value is ${2-}, checked here), or
#                 return 1 for an option it does not know.
# Then `parse_options "$@"` reads the options (-h/--help prints the usage, `--` ends them) and
# leaves the operands in the array `operands`. Every mistake exits 2 before anything runs.

usage() {
    sed -n "2,${usage_lines}s/^# \{0,1\}//p" "$0" >&2
    exit 2
}

fail() {
    printf '%s: %s\n' "$prog" "$1" >&2
    exit 2
}

parse_options() {
    while [ "$#" -gt 0 ]; do
        case "$1" in
        -h | --help) usage ;;
        --)
            shift
            break
            ;;
        -*)
            taken=0
            take_option "$@" || fail "unknown option: $1"
            [ "$#" -ge "$taken" ] || usage # an option's value is missing
            shift "$taken"
            ;;
        *) break ;;
        esac
    done
    operands=("$@")
}
