"""The portal's database backends: Django's own, with what this project changes about them."""
