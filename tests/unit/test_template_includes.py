"""Files brought into a template with AWS::Include, read as `sam package` and CloudFormation read them
(`seat_tools.local.template.resolve_includes`): the local stack and the tests see what the
deployed stack gets, and what CloudFormation would refuse is refused here first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seat_tools.local.template import TemplateError, include_locations, read_template_document


def include(location: str) -> str:
    return f"Fn::Transform: {{Name: AWS::Include, Parameters: {{Location: {location}}}}}"


def write_template(directory: Path, properties: str) -> Path:
    path = directory / "template.yaml"
    path.write_text(f"Resources:\n  Api:\n    Type: AWS::Serverless::Api\n    Properties:\n{properties}")
    return path


def test_a_local_file_beside_the_template_replaces_the_transform(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "openapi.yaml").write_text(
        'openapi: "3.0.1"\ninfo:\n  title: {"Fn::Sub": "${AWS::StackName} API"}\n'
    )
    path = write_template(
        tmp_path, f"      StageName: v1\n      DefinitionBody: {{{include('api/openapi.yaml')}}}\n"
    )

    properties = read_template_document(path)["Resources"]["Api"]["Properties"]

    assert properties == {
        "StageName": "v1",
        "DefinitionBody": {"openapi": "3.0.1", "info": {"title": {"Fn::Sub": "${AWS::StackName} API"}}},
    }
    written = read_template_document(path, includes=False)
    assert include_locations(written) == ["api/openapi.yaml"]


def test_keys_beside_the_transform_are_kept_and_may_not_be_set_twice(tmp_path: Path) -> None:
    (tmp_path / "more.yaml").write_text("Description: included\n")
    path = write_template(tmp_path, f"      Name: written\n      {include('more.yaml')}\n")
    assert read_template_document(path)["Resources"]["Api"]["Properties"] == {
        "Name": "written",
        "Description": "included",
    }

    (tmp_path / "more.yaml").write_text("Name: included\n")
    with pytest.raises(TemplateError, match=r"more\.yaml sets Name, which the template sets beside it"):
        read_template_document(path)


@pytest.mark.parametrize(
    ("snippet", "error"),
    [
        (
            'title: !Sub "${AWS::StackName}"\n',
            r"CloudFormation does not read short-form tags \(!Sub\) in a file brought in with AWS::Include",
        ),
        (f"paths: {{{include('other.yaml')}}}\n", "inner.yaml includes other.yaml: an included file cannot"),
        ("- a list\n", "inner.yaml must hold a key-value object to be included"),
    ],
)
def test_what_cloudformation_refuses_in_an_included_file_is_refused(
    tmp_path: Path, snippet: str, error: str
) -> None:
    (tmp_path / "inner.yaml").write_text(snippet)
    (tmp_path / "other.yaml").write_text("a: b\n")
    path = write_template(tmp_path, f"      DefinitionBody: {{{include('inner.yaml')}}}\n")
    with pytest.raises(TemplateError, match=error):
        read_template_document(path)


def test_a_location_only_sam_package_could_resolve_is_refused_in_one_line(tmp_path: Path) -> None:
    path = write_template(tmp_path, f"      DefinitionBody: {{{include('s3://bucket/openapi.yaml')}}}\n")
    with pytest.raises(TemplateError, match=r"AWS::Include of s3://bucket/openapi\.yaml: only a local file"):
        read_template_document(path)
    missing = write_template(tmp_path, f"      DefinitionBody: {{{include('api/missing.yaml')}}}\n")
    with pytest.raises(TemplateError, match=r"cannot read .*missing\.yaml, brought in with AWS::Include"):
        read_template_document(missing)
