#!/usr/bin/env python3
"""Read an aggregate fetch from a Tributary coordinator: one row per group of an entity's objects.

    ./aggregate.py --entity PullRequest --group-by author.login --count --sum additions --avg score \
        --where 'merged == false' --having 'count > 20' --sort=-sum_additions --limit 5

Sends one AggregateRequest over a DEALER socket (2 frames: b"TRB1" and a serialized tributary.v1.Envelope; see
docs/protocol.md §8a) and prints each row of the AggregateReply as a JSON line keyed by the row's names, as
`tributary fetch --group-by ... --json` does: {"author.login": "user7", "count": 42, "sum_additions": 8120, ...}.
The store computes the rows in one SQL query; no object is sent.

--where and --having take comparisons `KEY OP VALUE` joined by ` AND ` (OP one of == != < <= > >=, VALUE a JSON
literal: 12, 1.5, true, "open", null); they become the request's Predicate trees. The coordinator checks every key
against its model and answers INVALID_PREDICATE naming what it cannot aggregate.

Exit status: 0 on success; 1 when the coordinator refuses the request; 2 when it does not answer within 10 s.
"""

import argparse
import base64
import json
import re
import sys
import uuid

from pusher import pb, with_client

OPERATORS = {"==": pb.EQUAL, "!=": pb.NOT_EQUAL, "<": pb.LESS, "<=": pb.LESS_OR_EQUAL, ">": pb.GREATER,
             ">=": pb.GREATER_OR_EQUAL}
COMPARISON = re.compile(r"^\s*([A-Za-z_@][\w.@]*)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$")


def literal(text):
    """A JSON literal as a wire Value."""
    value = json.loads(text)
    if value is None:
        return pb.Value(null_value=True)
    if isinstance(value, bool):
        return pb.Value(bool_value=value)
    if isinstance(value, int):
        return pb.Value(int_value=value)
    if isinstance(value, float):
        return pb.Value(double_value=value)
    if isinstance(value, str):
        return pb.Value(string_value=value)
    raise ValueError(f"{text} is not a number, bool, string or null")


def predicate(text):
    """`KEY OP VALUE [AND KEY OP VALUE ...]` as a Predicate tree."""
    comparisons = []
    for part in re.split(r"\s+AND\s+", text):
        match = COMPARISON.match(part)
        if not match:
            raise ValueError(f"{part!r} is not KEY OP VALUE")
        key, operator, value = match.groups()
        comparisons.append(pb.Predicate(comparison=pb.Comparison(
            key=key, operator=OPERATORS[operator], values=[literal(value)])))
    if len(comparisons) == 1:
        return comparisons[0]
    return pb.Predicate(**{"and": pb.PredicateList(operands=comparisons)})


def python_value(value):
    """A wire Value as JSON takes it: dates as seconds since 1970, data as base64, uuids as strings."""
    kind = value.WhichOneof("kind")
    if kind in (None, "null_value"):
        return None
    if kind == "data_value":
        return base64.b64encode(value.data_value).decode()
    if kind == "uuid_value":
        return str(uuid.UUID(bytes=value.uuid_value))
    return getattr(value, kind)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", metavar="ENDPOINT", default="tcp://127.0.0.1:7400",
                        help="the coordinator's jobs/control endpoint (default tcp://127.0.0.1:7400)")
    parser.add_argument("--entity", required=True, metavar="NAME", help="the entity whose objects are grouped")
    parser.add_argument("--group-by", action="append", default=[], metavar="KEY",
                        help="a group key: an attribute, a to-one relationship or a key path through one "
                             "(author.login) (repeatable)")
    parser.add_argument("--count", action="store_true", help="each group's number of objects, named count")
    for function in ("sum", "avg", "min", "max"):
        parser.add_argument(f"--{function}", action="append", default=[], metavar="KEY",
                            help=f"each group's {function} of KEY, named {function}_KEY (repeatable)")
    parser.add_argument("--where", metavar="COMPARISONS", help="which objects, e.g. 'merged == false'")
    parser.add_argument("--having", metavar="COMPARISONS", help="which groups, by the row's names: 'count > 20'")
    parser.add_argument("--sort", action="append", default=[], metavar="NAME",
                        help="sort by a row's name, '-' before it for descending: --sort=-count (repeatable)")
    parser.add_argument("--limit", type=int, default=0, metavar="N", help="at most N rows (default: all)")
    args = parser.parse_args()

    aggregates = []
    if args.count:
        aggregates.append(pb.AggregateExpression(function=pb.AGGREGATE_COUNT, name="count"))
    for function in ("sum", "avg", "min", "max"):
        for key in getattr(args, function):
            name = "_".join([function] + [step.lstrip("@") for step in key.split(".")])
            aggregates.append(pb.AggregateExpression(
                function=pb.AggregateFunction.Value(f"AGGREGATE_{function.upper()}"), key=key, name=name))
    if not aggregates and not args.group_by:
        parser.error("name a group key (--group-by) or an aggregate (--count, --sum, --avg, --min, --max)")
    if not aggregates:
        aggregates.append(pb.AggregateExpression(function=pb.AGGREGATE_COUNT, name="count"))
    request = pb.AggregateRequest(entity=args.entity, group_by=args.group_by, aggregates=aggregates,
                                  sort=[pb.SortKey(key=key.lstrip("-"), descending=key.startswith("-"))
                                        for key in args.sort],
                                  limit=args.limit)
    for flag, text, field in (("--where", args.where, request.predicate), ("--having", args.having, request.having)):
        if text is None:
            continue
        try:
            field.CopyFrom(predicate(text))
        except (ValueError, json.JSONDecodeError) as error:
            parser.error(f"{flag}: {error}")

    def read(client):
        reply = client.request(aggregate_request=request).aggregate_reply
        for row in reply.rows:
            print(json.dumps(dict(zip(reply.names, map(python_value, row.values)))), flush=True)
        print(f"{len(reply.rows)} rows at seq {reply.seq}", file=sys.stderr)
        return 0

    return with_client(args.listen, read)


if __name__ == "__main__":
    sys.exit(main())
