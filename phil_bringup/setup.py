"""Install the phil_bringup package."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'phil_bringup'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE}']),
        (f'share/{PACKAGE}', ['package.xml']),
        (f'share/{PACKAGE}/config', glob('config/*.yaml') + glob('config/*.xml')),
        (f'share/{PACKAGE}/launch', glob('launch/*.py')),
        # The control tower's page, built by make setup (npm) before colcon runs.
        (f'share/{PACKAGE}/web', glob('web/dist/*')),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='Phil maintainers',
    maintainer_email='phil-maintainers@kist.re.kr',
    description='See package.xml.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'phil_launch = phil_bringup.launcher:main',
            'phil = phil_bringup.cli.main:main',
            'description_publisher = phil_bringup.description_publisher.node:main',
            'command_path = phil_bringup.command_path_node:main',
            'control_tower = phil_bringup.control_tower.node:main',
        ],
    },
)
