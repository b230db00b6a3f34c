"""Install phil_ros: the rclpy runtime shared by every Phil node."""

from setuptools import find_packages, setup

PACKAGE = 'phil_ros'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE}']),
        (f'share/{PACKAGE}', ['package.xml']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='Phil maintainers',
    maintainer_email='phil-maintainers@kist.re.kr',
    description='The rclpy runtime shared by every Phil node.',
    license='Apache-2.0',
)
