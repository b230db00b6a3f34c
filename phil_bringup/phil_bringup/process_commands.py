"""The command line of each process the launcher starts: a ROS node (its parameter file, then
the launcher's values as ``-p``), a plain process, or a composed process running several nodes
(every member's parameter file, then a file of the launcher's values for each)."""

from __future__ import annotations

from pathlib import Path

import yaml

from phil_bringup.core.dds_scope import enclave_of
from phil_bringup.core.node_set import NodeSpec, composed_parameters_yaml, watched_nodes


def package_prefix(package: str) -> Path:
    """Install prefix of a ROS package, via the ament index."""
    from ament_index_python.packages import get_package_prefix

    return Path(get_package_prefix(package))


def config_path(file_name: str) -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory('phil_bringup')) / 'config' / file_name


def node_command(
    spec: NodeSpec, sim: bool, log_dir: Path | None = None, overrides: dict[str, str] | None = None
) -> list[str]:
    """The command line ``ros2 run`` would build for ``spec``; for a plain process the
    ``overrides`` are its ``--option value`` pairs."""
    executable = package_prefix(spec.package) / 'lib' / spec.package / spec.executable
    command = [str(executable), *spec.arguments]
    if not spec.ros_node:
        if spec.executable == 'device_simulator' and log_dir is not None:
            # Detected impacts go to the run folder (the plots and benchmarks read them).
            command += ['--impacts-jsonl', str(log_dir / 'impacts.jsonl')]
        for option, value in (overrides or {}).items():
            command += [f'--{option}', value]
        return command
    command += ['--ros-args', '--enclave', enclave_of(spec.name), '-r', f'__node:={spec.name}']
    parameter_file = spec.parameter_file_for(sim)
    if parameter_file:
        command += ['--params-file', str(config_path(parameter_file))]
    for name, value in node_parameters(spec, sim, log_dir, overrides).items():
        command += ['-p', f'{name}:={value}']
    return command


def node_parameters(
    spec: NodeSpec, sim: bool, log_dir: Path | None, overrides: dict[str, str] | None
) -> dict[str, str]:
    """The parameters the launcher sets on a ROS node over its file, as ``-p`` values."""
    parameters = {'sim': 'true' if sim else 'false', **(overrides or {})}
    if spec.watches:
        parameters['watched_nodes'] = '[' + ','.join(watched_nodes(spec)) + ']'
    if log_dir is not None:
        parameters['log_dir'] = str(log_dir)
    return parameters


def composed_command(
    process: NodeSpec,
    sim: bool,
    log_dir: Path | None,
    overrides: dict[str, dict[str, str]],
    parameters_dir: Path,
) -> list[str]:
    """The command line of a composed ``process``: every member's parameter file, then one
    file (written to ``parameters_dir``) with the launcher's values for each member, typed as
    ``-p`` would type them (a later file wins, as ``-p`` wins over a file)."""
    executable = package_prefix(process.package) / 'lib' / process.package / process.executable
    command = [str(executable), '--ros-args', '--enclave', enclave_of(process.name)]
    for member in process.members:
        if member.parameter_file_for(sim):
            command += ['--params-file', str(config_path(member.parameter_file_for(sim)))]
    launcher_values = {
        member.name: {
            name: yaml.safe_load(value)
            for name, value in node_parameters(
                member, sim, log_dir, overrides.get(member.name)
            ).items()
        }
        for member in process.members
    }
    parameters_dir.mkdir(parents=True, exist_ok=True)
    values_file = parameters_dir / f'{process.name}.launcher.yaml'
    values_file.write_text(composed_parameters_yaml(launcher_values))
    return [*command, '--params-file', str(values_file)]
