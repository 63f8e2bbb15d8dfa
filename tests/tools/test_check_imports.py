"""scripts/check_imports.py: finds import circles between a crate's modules, and only those."""
import os

from devstack import programs

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
check_imports = programs.load("check_imports")


def crate(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(tmp_path)


def test_two_siblings_that_name_each_other_are_a_circle(tmp_path, capsys):
    src = crate(tmp_path, {
        "lib.rs": "mod a;\nmod b;\n",
        "a.rs": "use super::b::B;\npub struct A;\n",
        "b.rs": "pub struct B;\nfn f() -> crate::a::A { todo() }\n",
    })
    assert check_imports.main([src]) == 1
    out = capsys.readouterr().out
    assert "import circle: a , b" in out and "a -> b" in out and "b -> a" in out


def test_a_loop_through_nested_modules_and_braced_uses_is_found(tmp_path, capsys):
    src = crate(tmp_path, {
        "lib.rs": "pub mod x;\npub mod y;\n",
        "x/mod.rs": "pub mod inner;\n",
        "x/inner.rs": "use crate::{y::{deep::D}, x};\n",
        "y/mod.rs": "pub mod deep;\n",
        "y/deep.rs": "// crate::x::inner is named in a comment only\npub struct D;\nconst S: &str = \"crate::x::inner\";\n"
                     "macro_rules! m { () => { $crate::x::inner::f() } }\n",
    })
    assert check_imports.main([src]) == 1
    assert "x::inner , y::deep" in capsys.readouterr().out


def test_children_naming_their_parent_and_one_way_layers_are_no_circle(tmp_path):
    src = crate(tmp_path, {
        "lib.rs": "pub mod store;\npub mod http;\npub use store::Store;\n",
        "store/mod.rs": "mod create;\nuse create::Creation;\npub struct Store;\n",
        "store/create.rs": "use super::Store;\npub enum Creation {}\n",
        "http/mod.rs": "mod handler;\nuse crate::store::Store;\n",
        "http/handler.rs": "use super::super::store;\nuse crate::Store;\n",
    })
    assert check_imports.main([src]) == 0


def test_the_projects_crates_have_no_circle():
    srcs = [os.path.join(ROOT, p) for p in ("shared/core/src", "shared/store/src", "shared/http/src", "cli/src")]
    assert check_imports.main(srcs) == 0
