"""Facts and timings of the fidelity probes (``fid_probes.py``), merged into ``checks.FACTS`` and
``checks.TIMINGS``: what must be equal on real workerd and in the simulator, and what must fall in a band."""

from __future__ import annotations

from typing import Any

from .round3 import round3_facts, round3_info

__all__ = ["FID_FACTS", "FID_TIMINGS", "fid_info"]


def _turn(r: dict) -> dict:
    return {"the request failed with": r["thrown"], "getAlarm() after the abort": r["get_alarm_after"],
            "fires": r["fires"], "fired in a new instance": r["new_instance"] if r["fires"] else None}


def _ctor(r: dict) -> dict:
    out = {"alarm() ran": r["alarm_ran"], "retryCount in alarm()": r["retry_count"]}
    if r["fails"] < 100:
        out["failed constructions"] = len(r["failed_constructions_t"])
    else:
        out["failed constructions in the window: at least 4"] = len(r["failed_constructions_t"]) >= 4
    return out


def _no_alarm(r: dict) -> dict:
    return {"setAlarm from a request throws": r["request_set_alarm_error_name"],
            "its message": r["request_set_alarm_error"], "setAlarm in the constructor": r["constructor_set_alarm"],
            "getAlarm() after the due time": r["alarm_after"], "warnings logged": r["warning_logged"]}


def _deploy(r: dict) -> dict:
    return {"setAlarm() error before the deploy": r["set_alarm_error"], "getAlarm() before the deploy": r["get_alarm_before"],
            "constructions for the due alarm, before any request": len(r["constructed_for_the_alarm"]),
            "alarm() runs": r["alarm_runs"], "constructions after the restart (a retry after eviction adds one)":
            r["constructions_after_restart"], "getAlarm() after the due time": r["get_alarm_after"],
            "the request met the instance the alarm built": r["same_instance_at_check"],
            "warnings logged after the deploy": r["warning_logged"]}


def _long(r: dict) -> dict:
    return {"retryCount of each run": r["retry_counts"], "the retry runs in a new instance": r["new_instance_on_retry"]}


def _same(r: dict) -> dict:
    return {"alarms fired": r["fired"], "ran in arming order": r["arming_order"]}


def _delete_all(r: dict) -> dict:
    return {"getAlarm() before deleteAll()": r["get_alarm_before"], "getAlarm() after deleteAll()": r["get_alarm_after"],
            "fires": r["fires"]}


FID_FACTS = {
    "turn_abort_await": _turn, "turn_abort_noawait": _turn, "turn_abort_sync": _turn,
    "ctor_fail_2": _ctor, "ctor_fail_never": _ctor, "no_alarm_class": _no_alarm, "long_alarm": _long,
    "deploy_removes_alarm": _deploy,
    "same_instant": _same, "delete_all_2026_11": _delete_all, "delete_all_2026_01": _delete_all,
    "lateness_many": lambda r: {"fires recorded": r["stats"].get("n")},
    "round3": round3_facts,  # round3.py: transactions, RPC errors, stored values, setAlarm's argument, a CPU loop
}


def _t_turn(r: dict, b: Any) -> list:
    return [("lateness of the kept alarm", r["fire_t"][0] - r["rel_ms"], b.late(cold=True))] if r["fires"] else []


def _t_ctor(r: dict, b: Any) -> list:
    fails = r["failed_constructions_t"]
    out = [("first construction after the scheduled time", fails[0] - r["scheduled"], b.late(cold=True))]
    for n, (a, c) in enumerate(zip(fails, fails[1:])):
        out.append((f"wait before construction {n + 2}", c - a, b.retry(n)))
    if r["alarm_ran"]:
        out.append(("wait before the run that succeeded", r["alarm_t"] - fails[-1], b.retry(len(fails) - 1)))
    return out[:5]


def _t_deploy(r: dict, b: Any) -> list:
    return [("the due alarm's construction after its time", t, b.late(cold=True)) for t in r["constructed_for_the_alarm"][:1]]


def _t_long(r: dict, b: Any) -> list:
    limit = b.prof.handler_limit_ms
    lo, hi = b.retry(0)
    return [("from the first run to the retry", r["starts_t"][1] - r["starts_t"][0], (limit + lo, limit + hi + b.cold_ms))]


def _t_same(r: dict, b: Any) -> list:
    return [("first fire's lateness", r["first_late_ms"], b.late()), ("spread of the 40 fires", r["spread_ms"], b.late())]


FID_TIMINGS = {
    "turn_abort_sync": _t_turn, "ctor_fail_2": _t_ctor, "ctor_fail_never": _t_ctor, "long_alarm": _t_long,
    "same_instant": _t_same, "deploy_removes_alarm": _t_deploy,
    "lateness_many": lambda r, b: [("median lateness", r["stats"]["median"], b.late())],
}


def fid_info(name: str, r: dict) -> dict:
    if name == "round3":
        return round3_info(r)
    if name == "same_instant":
        return {"order (arming index of each fire)": r["order"], "lateness (ms)": r["late_ms"]}
    if name == "lateness_many":
        return {"lateness stats (ms)": r["stats"]}
    if name == "deploy_removes_alarm":
        return {"restart (ms, relative to the alarm's time)": [r["restart_at"], r["restart_done"]],
                "constructions after the restart at (ms)": r["construct_t"]}
    if name in ("ctor_fail_2", "ctor_fail_never"):
        return {"failed constructions at (ms)": r["failed_constructions_t"]}
    return {}
