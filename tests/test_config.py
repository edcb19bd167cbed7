"""Runtime configuration: documented, validated, and the contract's snippet runs as written."""

from dataclasses import fields

import pytest

from hydro.contact.config import (CollisionConfig, HydroelasticConfig, NewtonConfig, active_config, configure_newton,
                          field_docs)


@pytest.mark.parametrize("cls", [HydroelasticConfig, CollisionConfig, NewtonConfig])
def test_every_field_has_a_docstring(cls):
    docs = field_docs(cls)
    assert list(docs) == [f.name for f in fields(cls)]
    assert all(d.strip() for d in docs.values())


def test_the_contract_snippet_runs_as_written():
    configure_newton(NewtonConfig(collision_cfg=CollisionConfig(hydroelastic=HydroelasticConfig(
        enabled=True, reduce_contacts=True))))
    cfg = active_config().collision_cfg.hydroelastic
    assert cfg.enabled is True and cfg.reduce_contacts is True
    configure_newton(NewtonConfig())  # back to the defaults for other tests
    assert active_config() == NewtonConfig()


def test_the_documented_fields_exist_with_their_defaults():
    c = HydroelasticConfig()
    assert c.enabled and c.reduce_contacts
    assert c.interface == "continuous"
    assert 0.0 <= c.mc_edge_clamp_min < 0.5
    assert c.max_contacts_per_pair >= 8
    for name in ("pair_capacity", "cell_capacity", "block_capacity", "contact_capacity", "reduced_contact_capacity"):
        assert getattr(c, name) is None


@pytest.mark.parametrize("field,value", [
    ("enabled", 1),
    ("reduce_contacts", "yes"),
    ("mc_edge_clamp_min", -0.1),
    ("mc_edge_clamp_min", 0.5),
    ("mc_edge_clamp_min", float("nan")),
    ("interface", "midsurface"),
    ("pair_capacity", 0),
    ("contact_capacity", 2.5),
    ("block_capacity", True),
    ("max_contacts_per_pair", 4),
    ("overflow", "explode"),
    ("polygon_cells", 0),
    ("polygon_cells", 65),
    ("polygon_cells", 2.0),
    ("flat_polygons", 1),
    ("exact_primitives", "no"),
])
def test_bad_values_raise_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"HydroelasticConfig\.{field}"):
        HydroelasticConfig(**{field: value})


def test_nesting_is_checked_and_configs_are_frozen():
    with pytest.raises(ValueError, match="CollisionConfig.hydroelastic"):
        CollisionConfig(hydroelastic={"enabled": True})
    with pytest.raises(ValueError, match="NewtonConfig.collision_cfg"):
        NewtonConfig(collision_cfg=HydroelasticConfig())
    with pytest.raises(ValueError, match="configure_newton takes a NewtonConfig"):
        configure_newton(HydroelasticConfig())
    with pytest.raises(AttributeError):
        HydroelasticConfig().enabled = False
