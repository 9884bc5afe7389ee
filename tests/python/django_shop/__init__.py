"""A small Django app for test_django.py: authors, books and orders."""
