"""One load grammar (capacity/load.py) for the model, the validator's --profile and the campaign specs."""

import glob
import json
from pathlib import Path

import pytest

from capacity.errors import WorkloadError
from capacity.estimate import Scenario
from capacity.load import Load, parse_load, parse_loads
from validate.errors import UsageError
from validate.profiles import LoadPoint, parse_profile
from validate.spec_points import GRAMMAR, parse_point

ROOT = Path(__file__).resolve().parents[1]


def test_the_validator_reads_the_models_loads():
    assert LoadPoint is Load
    for text in ("sync", "concurrency:16", "burst:1000", "rate:2.5", "rate:0.333333333"):
        load = parse_load(text)
        assert parse_profile(text) == [load]
        assert parse_load(load.label) == parse_load(str(load))  # a stored label parses back to the same point
        assert Scenario(load=load.label).load == load.label or parse_load(Scenario(load=load.label).load) == load


def test_lists_and_shared_labels():
    assert [x.label for x in parse_loads("concurrency:1,4,16")] == ["concurrency:1", "concurrency:4", "concurrency:16"]
    with pytest.raises(WorkloadError, match="same load point rate:1 "):
        parse_loads("rate:1.0000001,1.0000002")
    with pytest.raises(UsageError, match="^--profile burst:2.5: burst takes a whole number$"):
        parse_profile("burst:2.5")


def test_every_committed_spec_point_parses():
    seen = set()
    for path in glob.glob(str(ROOT / "scripts/device/specs/*.json")):
        for cfg in json.loads(Path(path).read_text()):
            for isl, osl, *own in cfg["shapes"]:
                for text in (own[0] if own else cfg["points"]):
                    p = parse_point(text)
                    seen.add(p.kind)
                    assert p.load is not None or p.kind == "rates"
    assert seen >= {"sync", "concurrency", "burst", "warmburst", "warmprate", "prate", "rates"}


def test_a_repeated_warm_pass():
    p = parse_point("warmprate:20:400:4")
    assert (p.recorded, p.passes, p.num_requests, p.arrivals, p.load.label) == (False, 4, 400, "poisson", "rate:20")
    assert parse_point("prate:20:400").passes == 1


@pytest.mark.parametrize("text", ["sync", "concurrency:8", "burst:0", "prate:x:10", "poisson:3:10", "rates:3",
                                  "warmprate:10:100:0", "warmprate:10:100"])
def test_a_bad_spec_point_is_one_line(text):
    with pytest.raises(UsageError) as err:
        parse_point(text)
    assert "\n" not in str(err.value) and repr(text) in str(err.value)


def test_campaign_and_predictions_read_the_one_grammar():
    for script in ("scripts/device/campaign.py", "scripts/predict_spec.py"):
        source = (ROOT / script).read_text()
        assert "parse_point(" in source
        assert not any(f'kind == "{k}"' in source for k in GRAMMAR if k not in ("rates", "sync", "concurrency")), script


def test_a_profiled_point_is_a_lone_request_point_never_recorded():
    p = parse_point("profsync:3")
    assert (p.profiled, p.recorded, p.num_requests, p.load.label) == (True, False, 3, "sync")
    assert not parse_point("sync:3").profiled
