"""`from torchvision import transforms` for the stand-in (peer/stand_ins/torchvision/__init__.py says why)."""
